import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { startPrismProxy, violationsOf, type PrismProxy, type Violation } from "../helpers/prism.ts";
import { createMailTestApp } from "../helpers/smtp.ts";
import { SseClient } from "../helpers/sse.ts";
import { waitFor } from "../helpers/wait.ts";

// Stoplight Prism, in proxy mode, checks every answer of a run that calls each operation of the OpenAPI
// document (successes and the main errors) against the document: status, media type, headers, body.
// The document given to Prism is the server's own, plus the per-collection documents of the run's
// collections (their concrete paths win over `/api/v1/{collection}`), plus one deliberately wrong
// collection document: its answers must be reported, so a Prism that stopped checking fails the test.
// Beyond Prism's verdicts: a status must be listed by its operation (Prism lets `default` take any; here
// only a 5xx may fall to it), and a request the run does not mark as bad must be valid by the document.

const { t, smtp, close } = await createMailTestApp();
let base: string;
let prism: PrismProxy;
/** The document Prism checks against: the server's, with per-collection ones merged in. */
let doc: any;
/** The server's own document, and the per-collection one of posts: every operation of each is called. */
let serverDoc: any;
let postsDoc: any;

interface Exchange {
  method: string;
  url: string;
  template: string;
  status: number;
  violations: Violation[];
  /** The request is outside the document on purpose (a bad body, no credentials…): Prism's objections to it are expected. */
  bad: boolean;
  /** Prism's own error answer (application/problem+json), e.g. when it could not reach the upstream. */
  prismError: string | null;
}
const exchanges: Exchange[] = [];

/** The path of `document` a concrete request reaches: literal segments win over `{param}` ones, as in the router. */
function templateOf(method: string, url: string, document = doc): string {
  const path = url.split("?")[0]!;
  let best: { template: string; literal: number } | null = null;
  for (const [template, item] of Object.entries<any>(document.paths)) {
    if (!item[method.toLowerCase()]) continue;
    const re = new RegExp(`^${template.replace(/\{path\}$/, ".*").replace(/\{[^}]+\}/g, "[^/]+")}$`);
    if (!re.test(path)) continue;
    const literal = template.split("/").filter((s) => s && !s.startsWith("{")).length;
    if (!best || literal > best.literal) best = { template, literal };
  }
  return best?.template ?? `(undocumented) ${path}`;
}

interface CallOpts {
  body?: unknown;
  token?: string | null;
  admin?: boolean;
  headers?: Record<string, string>;
  /** A request the document does not allow (see Exchange.bad). */
  bad?: boolean;
  /**
   * Sent to the server itself, not through Prism: a redirect, which Prism's proxy would follow. Its
   * status and Location header are checked against the document here.
   */
  direct?: boolean;
}

/** Sends a request through Prism and keeps its verdict. */
async function call(method: string, url: string, opts: CallOpts = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.admin ? ADMIN_SECRET : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${opts.direct ? base : prism.url}${url}`, { method, headers, body, redirect: "manual" });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {}
  const template = templateOf(method, url);
  const violations = opts.direct ? redirectViolations(method, template, res) : violationsOf(res);
  const prismError = !opts.direct && res.headers.get("content-type")?.includes("application/problem+json") ? text : null;
  exchanges.push({ method, url, template, status: res.status, violations, bad: !!opts.bad, prismError });
  return { status: res.status, body: parsed, headers: res.headers };
}
const admin = { admin: true };
const bad = { bad: true };

/** What Prism would say of a redirect: its status must be documented, with a Location header. */
function redirectViolations(method: string, template: string, res: Response): Violation[] {
  const documented = doc.paths[template]?.[method.toLowerCase()]?.responses?.[String(res.status)];
  if (!documented) return [{ location: ["response"], severity: "Error", message: `status ${res.status} is not documented` }];
  if (documented.headers?.Location && !res.headers.get("location")) return [{ location: ["response", "headers"], severity: "Error", message: "no Location header" }];
  if (!documented.headers?.Location) return [{ location: ["response"], severity: "Error", message: `the redirect ${res.status} is documented without its Location header` }];
  return [];
}

/** Sends a request that mails `to`, and returns the token of the mail it sent. */
async function mailed(to: string, send: () => Promise<unknown>): Promise<string> {
  const before = smtp.to(to).length;
  await send();
  await t.ctx.mailer.flush();
  await waitFor(() => smtp.to(to).length > before, { what: `a mail to ${to}` });
  return smtp.lastToken(to);
}

/** The per-collection document of `name`, as an admin gets it. */
async function collectionDoc(name: string): Promise<any> {
  const res = await t.admin("GET", `/api/v1/openapi.json?collection=${name}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** The server's document with the per-collection ones merged in: their paths and their own components. */
function merged(server: any, ...cols: any[]): any {
  const out = structuredClone(server);
  for (const c of cols) {
    Object.assign(out.paths, c.paths);
    for (const [name, schema] of Object.entries(c.components.schemas)) out.components.schemas[name] ??= schema;
  }
  return out;
}

beforeAll(async () => {
  await t.ready;
  t.app.listen({ port: 0, hostname: "127.0.0.1" });
  base = `http://127.0.0.1:${t.app.server!.port}`;
  // The collections whose documents are merged in: every field type, and each kind of relation.
  for (const [name, rules] of [
    ["authors", { read: "public", create: "public", update: "public", delete: "public" }],
    ["posts", { read: "public", create: "authenticated", update: "owner", delete: "owner" }],
    ["tags", { read: "public", create: "public" }],
    ["canary", { read: "public", create: "public" }],
  ] as const)
    expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/authors", { name: "Ada", born: 1815, active: true, profile: { city: "London" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/posts", { title: "seed", views: 1, draft: false, meta: { a: 1 }, list: [1, 2] })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/tags", { label: "seed" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/canary", { label: "seed" })).status).toBe(201);
  for (const rel of [
    { from_col: "posts", from_field: "author", to_col: "authors", type: "one" },
    { from_col: "authors", from_field: "posts", to_col: "posts", type: "many", to_field: "author" },
    { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" },
  ])
    expect((await t.admin("POST", "/api/v1/admin/relations", rel)).status).toBe(201);
  serverDoc = (await t.req("GET", "/api/v1/openapi.json")).body;
  postsDoc = await collectionDoc("posts");
  const canary = await collectionDoc("canary");
  // The deliberate mistake: the canary's text field documented as a number.
  for (const schema of ["CanaryRecord", "CanaryProjection"]) canary.components.schemas[schema].properties.label = { type: ["number", "null"] };
  doc = merged(serverDoc, await collectionDoc("authors"), postsDoc, await collectionDoc("tags"), canary);
  prism = await startPrismProxy(doc, base);
}, 180_000);

afterAll(async () => {
  await prism?.stop();
  await t.app.server?.stop(true);
  await close();
});

describe("Prism (proxy mode) over a run covering every operation", () => {
  test("every answer matches the document; the deliberately wrong one is reported", async () => {
    const password = "password123";
    // ---- Server, documents, pages
    await call("GET", "/health");
    await call("GET", "/api/v1/health");
    await call("GET", "/ready");
    await call("GET", "/api/v1/ready");
    await call("GET", "/api/v1/openapi.json");
    await call("GET", "/api/v1/openapi.json?collection=posts", admin);
    await call("GET", "/api/v1/openapi.json?collection=posts", bad);
    await call("GET", "/api/v1/openapi.json?collection=nope", admin);
    await call("GET", "/_", { direct: true });
    await call("GET", "/_/");
    await call("GET", "/_/nope.js");
    await call("GET", "/auth/verify-email?token=x", { headers: { accept: "text/html" } });
    await call("GET", "/auth/magic-link?token=x", { headers: { accept: "text/html" } });
    await call("GET", "/auth/reset-password?token=x", { headers: { accept: "text/html" } });
    await call("GET", "/auth/callback?error=access_denied", { headers: { accept: "text/html" } });
    await call("GET", "/auth/callback", { headers: { accept: "application/json" } });

    // ---- Admin: login, collections, settings
    await call("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    await call("POST", "/api/v1/admin/login", { body: { secret: "wrong" } });
    await call("GET", "/api/v1/admin/collections", bad);
    await call("GET", "/api/v1/admin/collections", admin);
    await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "notes", rules: { read: "public", create: "public", update: "public", delete: "public" } } });
    await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "notes" } });
    await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "1bad" } });
    await call("POST", "/api/v1/admin/collections", { ...admin, ...bad, body: [] });
    await call("GET", "/api/v1/admin/collections/posts", admin);
    await call("GET", "/api/v1/admin/collections/nope", admin);
    await call("PATCH", "/api/v1/admin/collections/notes", { ...admin, body: { field_rules: [{ field: "title", max: 100 }] } });
    await call("PATCH", "/api/v1/admin/collections/notes", { ...admin, body: { rules: { read: "nope" } } });
    await call("PUT", "/api/v1/admin/collections/notes/rules", { ...admin, body: { rules: { read: "public" } } });
    await call("PUT", "/api/v1/admin/collections/nope/rules", { ...admin, body: { rules: { read: "public" } } });
    await call("GET", "/api/v1/admin/collections/posts/stats", admin);
    await call("POST", "/api/v1/admin/collections/notes/rules/check", { ...admin, body: { op: "read", rule: "title = 'a' || @auth.id != null" } });
    await call("POST", "/api/v1/admin/collections/notes/rules/check", { ...admin, body: { op: "read", rule: "title = (" } });
    await call("POST", "/api/v1/admin/collections/nope/rules/check", { ...admin, body: { op: "read", rule: "public" } });
    await call("POST", "/api/v1/admin/collections/notes/fields", { ...admin, body: { name: "summary", type: "text" } });
    await call("POST", "/api/v1/admin/collections/notes/fields", { ...admin, body: { name: "summary", type: "text" } });
    await call("POST", "/api/v1/admin/collections/notes/fields", { ...admin, ...bad, body: { name: "x", type: "date" } });
    await call("PATCH", "/api/v1/admin/collections/notes/fields/summary", { ...admin, body: { name: "abstract" } });
    await call("PATCH", "/api/v1/admin/collections/notes/fields/nope", { ...admin, body: { name: "other" } });
    await call("DELETE", "/api/v1/admin/collections/notes/fields/abstract", admin);
    await call("DELETE", "/api/v1/admin/collections/notes/fields/abstract", admin);
    const schema = await call("GET", "/api/v1/admin/schema", admin);
    await call("POST", "/api/v1/admin/schema/apply", { ...admin, body: { schema: schema.body, dry_run: true } });
    await call("POST", "/api/v1/admin/schema/apply", { ...admin, body: { schema: schema.body } });
    await call("POST", "/api/v1/admin/schema/apply", { ...admin, body: { schema: { collections: [{ name: "1bad" }] } } });
    await call("GET", "/api/v1/admin/settings", admin);
    await call("PATCH", "/api/v1/admin/settings", { ...admin, body: { app_name: "Prism" } });
    await call("PATCH", "/api/v1/admin/settings", { ...admin, ...bad, body: { nope: 1 } });

    // ---- Auth
    const reg = await call("POST", "/api/v1/auth/register", { body: { email: "ada@example.com", password } });
    expect(reg.status).toBe(201);
    const token = reg.body.access_token as string;
    const uid = reg.body.user.id as string;
    await call("POST", "/api/v1/auth/register", { body: { email: "ada@example.com", password } });
    await call("POST", "/api/v1/auth/register", { body: { email: "nope", password } });
    await call("POST", "/api/v1/auth/register", { ...bad, body: "{nope" });
    const login = await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password } });
    await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password: "wrong-password" } });
    await call("POST", "/api/v1/auth/refresh", { body: { refresh_token: login.body.refresh_token } });
    await call("POST", "/api/v1/auth/refresh", { body: { refresh_token: "nope" } });
    await call("GET", "/api/v1/auth/me", { token });
    await call("GET", "/api/v1/auth/me", bad);
    await call("PATCH", "/api/v1/auth/me", { token, body: { metadata: { theme: "dark" } } });
    await call("PATCH", "/api/v1/auth/me", { token, ...bad, body: { email: "x@example.com" } });
    const verification = await mailed("ada@example.com", () => call("POST", "/api/v1/auth/resend-verification", { token }));
    await call("POST", "/api/v1/auth/verify-email", { body: { token: verification } });
    await call("POST", "/api/v1/auth/verify-email", { body: { token: "nope" } });
    await call("POST", "/api/v1/auth/resend-verification", { token });
    const magic = await mailed("ada@example.com", () => call("POST", "/api/v1/auth/magic-link", { body: { email: "ada@example.com" } }));
    await call("POST", "/api/v1/auth/magic-link", { body: { email: "nope" } });
    await call("POST", "/api/v1/auth/magic-link/verify", { body: { token: magic } });
    await call("POST", "/api/v1/auth/magic-link/verify", { body: { token: "nope" } });
    const reset = await mailed("ada@example.com", () => call("POST", "/api/v1/auth/forgot-password", { body: { email: "ada@example.com" } }));
    await call("POST", "/api/v1/auth/reset-password", { body: { token: reset, password: "password456" } });
    await call("POST", "/api/v1/auth/reset-password", { body: { token: "nope", password: "password456" } });
    const again = await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password: "password456" } });
    const ada = again.body.access_token as string;

    // 2FA: setup, enable, a login's second step, disable.
    await call("GET", "/api/v1/auth/2fa/status", { token: ada });
    const setup = await call("POST", "/api/v1/auth/2fa/setup", { token: ada });
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    await call("POST", "/api/v1/auth/2fa/enable", { token: ada, body: { code: "000000" } });
    const enabled = await call("POST", "/api/v1/auth/2fa/enable", { token: ada, body: { code: totp.generate({ timestamp: t.clock.now() }) } });
    expect(enabled.status).toBe(200);
    t.clock.advance(30_000);
    const step = await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password: "password456" } });
    expect(step.body.totp_required).toBe(true);
    await call("POST", "/api/v1/auth/2fa/verify", { body: { totp_token: step.body.totp_token, code: "000000" } });
    const verified = await call("POST", "/api/v1/auth/2fa/verify", { body: { totp_token: step.body.totp_token, code: totp.generate({ timestamp: t.clock.now() }) } });
    expect(verified.status).toBe(200);
    t.clock.advance(30_000);
    await call("DELETE", "/api/v1/auth/2fa/disable", { token: ada, body: { code: "000000" } });
    const disabled = await call("DELETE", "/api/v1/auth/2fa/disable", { token: ada, body: { code: totp.generate({ timestamp: t.clock.now() }) } });
    expect(disabled.status).toBe(200);
    await call("POST", "/api/v1/auth/2fa/setup", { token: ada });

    // API keys.
    const key = await call("POST", "/api/v1/auth/api-keys", { token: ada, body: { name: "ci" } });
    await call("POST", "/api/v1/auth/api-keys", { token: ada, body: { name: "" } });
    await call("GET", "/api/v1/auth/api-keys", { token: ada });
    const spare = await call("POST", "/api/v1/auth/api-keys", { token: ada, body: { name: "spare" } });
    await call("DELETE", `/api/v1/auth/api-keys/${spare.body.id}`, { token: ada });
    await call("DELETE", "/api/v1/auth/api-keys/nope", { token: ada });
    await call("GET", "/api/v1/auth/api-keys", { ...bad, headers: { "x-api-key": key.body.key } });

    // OAuth: a provider without credentials, one with them (its redirects are checked here, not by Prism).
    await call("GET", "/api/v1/auth/oauth/accounts", { token: ada });
    await call("GET", "/api/v1/auth/oauth/portal");
    await call("GET", "/api/v1/auth/oauth/nope");
    await t.admin("PATCH", "/api/v1/admin/settings", { oauth_codehost_client_id: "id", oauth_codehost_client_secret: "secret" });
    expect((await call("GET", "/api/v1/auth/oauth/codehost", { direct: true })).status).toBe(302);
    expect((await call("GET", "/api/v1/auth/oauth/codehost/callback?code=x&state=y", { direct: true })).status).toBe(302);
    await call("GET", "/api/v1/auth/oauth/nope/callback?code=x&state=y");
    await call("DELETE", "/api/v1/auth/oauth/codehost", { token: ada });
    await call("DELETE", "/api/v1/auth/oauth/nope", { token: ada });
    await t.admin("PATCH", "/api/v1/admin/settings", { auth_oauth_enabled: false });
    await call("GET", "/api/v1/auth/oauth/codehost");
    await t.admin("PATCH", "/api/v1/admin/settings", { auth_oauth_enabled: true });

    // An impersonation token is refused on /auth but for GET /auth/me.
    const imp = await call("POST", `/api/v1/admin/users/${uid}/impersonate`, admin);
    await call("GET", "/api/v1/auth/me", { token: imp.body.access_token });
    await call("POST", "/api/v1/auth/logout", { token: imp.body.access_token });
    await call("POST", "/api/v1/auth/logout-all", { token: imp.body.access_token });
    await call("GET", "/api/v1/auth/oauth/accounts", { token: imp.body.access_token });

    // ---- Records
    const author = await call("POST", "/api/v1/authors", { body: { name: "Grace", born: 1906, active: false, profile: { city: "NYC" } } });
    const tag = await call("POST", "/api/v1/tags", { body: { label: "intro" } });
    const created = await call("POST", "/api/v1/posts", { token: ada, body: { title: "Hello", views: 3, draft: true, meta: { k: "v" }, list: ["a"], author: author.body._id, tags: [tag.body._id] } });
    expect(created.status).toBe(201);
    const id = created.body._id as string;
    await call("POST", "/api/v1/posts", { body: { title: "anon" } });
    await call("POST", "/api/v1/posts", { token: ada, ...bad, body: { views: "many" } });
    await call("POST", "/api/v1/posts", { token: ada, body: { author: "missing" } });
    // Idempotency-Key: the first answer, its replay (Idempotent-Replayed), the same key with another body (422), a bad key (400).
    const keyed = { token: ada, headers: { "idempotency-key": "prism-run-1" } };
    await call("POST", "/api/v1/tags", { ...keyed, body: { label: "keyed" } });
    await call("POST", "/api/v1/tags", { ...keyed, body: { label: "keyed" } });
    await call("POST", "/api/v1/tags", { ...keyed, body: { label: "other" } });
    await call("POST", "/api/v1/tags", { token: ada, headers: { "idempotency-key": "" }, body: { label: "keyed" } });
    await call("POST", "/api/v1/posts", { token: ada, ...bad, body: "[]" });
    await call("POST", "/api/v1/nope", { token: ada, body: { a: 1 } });
    await call("GET", "/api/v1/posts");
    await call("GET", "/api/v1/posts?sort=-views&limit=2&page=1");
    await call("GET", "/api/v1/posts?total=0");
    await call("GET", "/api/v1/posts?total=false&include_deleted=1", admin);
    await call("GET", `/api/v1/posts?after=${id}`);
    await call("GET", "/api/v1/posts?fields=title,views");
    await call("GET", "/api/v1/posts?expand=author&expand=tags");
    await call("GET", "/api/v1/authors?expand=posts");
    await call("GET", "/api/v1/posts?filter[views][gte]=1&filter=draft:eq:true");
    await call("GET", "/api/v1/posts?filter=nope:eq:1");
    await call("GET", "/api/v1/posts?limit=0", bad);
    await call("GET", "/api/v1/nope");
    await call("GET", `/api/v1/posts/${id}`);
    await call("GET", `/api/v1/posts/${id}?fields=title&expand=author`);
    await call("GET", `/api/v1/posts/${id}?expand=author,tags`);
    await call("GET", `/api/v1/authors/${author.body._id}?expand=posts`);
    await call("GET", "/api/v1/posts/missing");
    await call("PATCH", `/api/v1/posts/${id}`, { token: ada, body: { views: 4, tags: [tag.body._id] } });
    await call("PATCH", `/api/v1/posts/${id}`, { body: { views: 5 } });
    await call("PATCH", `/api/v1/posts/${id}`, { token, body: { views: 5 } });
    await call("PATCH", `/api/v1/posts/${id}`, { token: ada, ...bad, body: { views: "x" } });
    await call("GET", "/api/v1/posts/count");
    await call("GET", "/api/v1/posts/count?filter=views:gt:1&include_deleted=0");
    await call("GET", "/api/v1/posts/count?filter=nope:eq:1");
    await call("GET", "/api/v1/posts/aggregate?fn=sum&field=views");
    await call("GET", "/api/v1/posts/aggregate?fn=avg&field=views&group_by=draft");
    await call("GET", "/api/v1/posts/aggregate?fn=count");
    await call("GET", "/api/v1/posts/aggregate?fn=nope", bad);
    await call("POST", "/api/v1/posts/bulk", { token: ada, body: [{ title: "b1", views: 1 }, { title: "b2", views: 2 }] });
    await call("POST", "/api/v1/posts/bulk", { token: ada, ...bad, body: [{ title: "b3" }, { views: "x" }] });
    await call("POST", "/api/v1/posts/bulk", { token: ada, ...bad, body: [] });
    await call("POST", "/api/v1/posts/batch", {
      token: ada,
      body: { operations: [{ op: "create", data: { title: "c1" } }, { op: "update", id, data: { views: 6 } }] },
    });
    await call("POST", "/api/v1/posts/batch", { token: ada, body: { operations: [{ op: "delete", id: "missing" }] } });
    await call("POST", "/api/v1/posts/batch", { token: ada, ...bad, body: { operations: [{ op: "nope" }] } });
    await call("DELETE", `/api/v1/posts/${id}`, { token });
    await call("DELETE", `/api/v1/posts/${id}`, { token: ada });
    await call("GET", `/api/v1/posts/${id}?include_deleted=true`, { token: ada });
    await call("POST", `/api/v1/posts/${id}/restore`, { token: ada });
    await call("POST", `/api/v1/posts/${id}/restore`, { token: ada });
    await call("POST", "/api/v1/posts/missing/restore", { token: ada });
    await call("GET", "/api/v1/canary");
    await call("GET", "/api/v1/canary?fields=label");

    // ---- Admin: full-text, indexes, relations, records
    await call("GET", "/api/v1/admin/collections/notes/fts", admin);
    await call("POST", "/api/v1/admin/collections/posts/fts", admin);
    await call("POST", "/api/v1/admin/collections/posts/fts", admin);
    await call("GET", "/api/v1/posts?search=hello");
    await call("GET", "/api/v1/posts?search=%22");
    await call("DELETE", "/api/v1/admin/collections/posts/fts", admin);
    await call("GET", "/api/v1/admin/collections/nope/fts", admin);
    const index = await call("POST", "/api/v1/admin/collections/posts/indexes", { ...admin, body: { fields: ["views"] } });
    await call("POST", "/api/v1/admin/collections/posts/indexes", { ...admin, body: { fields: ["nope"] } });
    await call("POST", "/api/v1/admin/collections/posts/indexes", { ...admin, body: { fields: ["views"] } });
    await call("GET", "/api/v1/admin/collections/posts/indexes", admin);
    await call("DELETE", `/api/v1/admin/collections/posts/indexes/${index.body.name}`, admin);
    await call("DELETE", "/api/v1/admin/collections/posts/indexes/nope", admin);
    await call("GET", "/api/v1/admin/relations", admin);
    const rel = await call("POST", "/api/v1/admin/relations", { ...admin, body: { from_col: "notes", from_field: "post", to_col: "posts", type: "one" } });
    await call("POST", "/api/v1/admin/relations", { ...admin, body: { from_col: "notes", from_field: "post", to_col: "posts", type: "one" } });
    await call("POST", "/api/v1/admin/relations", { ...admin, body: { from_col: "notes", from_field: "x", to_col: "nope", type: "one" } });
    await call("POST", "/api/v1/admin/relations", { ...admin, ...bad, body: { from_col: "notes" } });
    await call("DELETE", `/api/v1/admin/relations/${rel.body.id}`, admin);
    await call("DELETE", "/api/v1/admin/relations/nope", admin);

    // ---- Admin: webhooks (no worker runs here: the delivery stays pending) and hook files
    await call("GET", "/api/v1/admin/webhooks", admin);
    const hook = await call("POST", "/api/v1/admin/webhooks", { ...admin, body: { url: "http://127.0.0.1:9/hook", collections: ["notes"], actions: ["create"] } });
    await call("POST", "/api/v1/admin/webhooks", { ...admin, body: { url: "ftp://example.com/hook", collections: ["notes"] } });
    await call("POST", "/api/v1/admin/webhooks", { ...admin, ...bad, body: { url: "http://127.0.0.1:9/hook" } });
    await call("GET", `/api/v1/admin/webhooks/${hook.body.id}`, admin);
    await call("GET", "/api/v1/admin/webhooks/nope", admin);
    await call("PATCH", `/api/v1/admin/webhooks/${hook.body.id}`, { ...admin, body: { secret: null, actions: ["create", "delete"] } });
    await call("PATCH", "/api/v1/admin/webhooks/nope", { ...admin, body: { enabled: false } });
    await call("POST", "/api/v1/notes", { body: { title: "to a webhook" } });
    const delivery = await t.ctx.db.get<{ id: string }>("SELECT id FROM _webhook_deliveries WHERE webhook_id = ?", [hook.body.id]);
    await call("GET", `/api/v1/admin/webhooks/${hook.body.id}/deliveries`, admin);
    await call("GET", "/api/v1/admin/webhooks/nope/deliveries", admin);
    await call("POST", `/api/v1/admin/webhooks/${hook.body.id}/deliveries/${delivery!.id}/retry`, admin);
    await call("POST", `/api/v1/admin/webhooks/${hook.body.id}/deliveries/nope/retry`, admin);
    await call("DELETE", `/api/v1/admin/webhooks/${hook.body.id}`, admin);
    await call("DELETE", "/api/v1/admin/webhooks/nope", admin);
    await call("GET", "/api/v1/admin/hooks", admin);
    await call("POST", "/api/v1/admin/hooks/reload", admin);
    const note = await call("POST", "/api/v1/notes", { body: { title: "n" } });
    await call("DELETE", `/api/v1/admin/collections/notes/records/${note.body._id}`, admin);
    await call("DELETE", "/api/v1/admin/collections/notes/records/missing", admin);
    await call("DELETE", "/api/v1/admin/collections/authors", admin);

    // ---- Own data, files, routes of hook files (none loaded here: 404)
    const leaver = await call("POST", "/api/v1/auth/register", { body: { email: "leaver@example.com", password } });
    const leaverToken = leaver.body.access_token as string;
    await call("POST", "/api/v1/notes", { token: leaverToken, body: { title: "mine" } });
    await call("GET", "/api/v1/auth/me/export", { token: leaverToken });
    await call("GET", "/api/v1/auth/me/export", bad);
    const fileToken = await call("POST", "/api/v1/files/token", { token: leaverToken });
    expect(typeof fileToken.body.token).toBe("string");
    await call("POST", "/api/v1/files/token", bad);
    await call("GET", `/api/v1/files/notes/nope/cover.png?token=${fileToken.body.token}`);
    await call("DELETE", "/api/v1/auth/me", { token: leaverToken, body: { password: "wrong-password" } });
    await call("DELETE", "/api/v1/auth/me", { token: leaverToken, body: { password } });
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) await call(method, "/api/v1/fn/pay", method === "GET" || method === "DELETE" ? {} : { body: {} });

    // ---- Admin: users and sessions
    await call("GET", "/api/v1/admin/users?limit=5&page=1&search=example", admin);
    await call("GET", "/api/v1/admin/users?limit=0", { ...admin, ...bad });
    const made = await call("POST", "/api/v1/admin/users", { ...admin, body: { email: "made@example.com", password, roles: ["editor"], metadata: { a: 1 } } });
    await call("POST", "/api/v1/admin/users", { ...admin, body: { email: "made@example.com" } });
    await call("POST", "/api/v1/admin/users", { ...admin, body: { email: "nope" } });
    await call("POST", "/api/v1/admin/users", { ...admin, ...bad, body: { nope: 1 } });
    await call("GET", `/api/v1/admin/users/${made.body.id}`, admin);
    await call("GET", "/api/v1/admin/users/nobody", admin);
    await call("PATCH", `/api/v1/admin/users/${made.body.id}`, { ...admin, body: { is_verified: true, roles: ["editor", "author"] } });
    await call("PATCH", `/api/v1/admin/users/${made.body.id}`, { ...admin, body: { email: "ada@example.com" } });
    await call("PATCH", `/api/v1/admin/users/${made.body.id}`, { ...admin, body: { email: "nope" } });
    await call("GET", `/api/v1/admin/users/${uid}/sessions`, admin);
    await call("GET", `/api/v1/admin/users/${uid}/security`, admin);
    await call("POST", `/api/v1/admin/users/${uid}/reset-2fa`, admin);
    await call("GET", `/api/v1/admin/users/${uid}/api-keys`, admin);
    await call("DELETE", `/api/v1/admin/users/${uid}/api-keys/${key.body.id}`, admin);
    await call("DELETE", `/api/v1/admin/users/${uid}/api-keys/nope`, admin);
    await call("POST", `/api/v1/admin/users/${uid}/unlock`, admin);
    await call("POST", "/api/v1/admin/users/nobody/impersonate", admin);
    const sessions = await t.admin("GET", `/api/v1/admin/users/${made.body.id}/sessions`);
    const mine = await call("POST", "/api/v1/auth/login", { body: { email: "made@example.com", password } });
    const sid = (await t.admin("GET", `/api/v1/admin/users/${made.body.id}/sessions`)).body.items[0]?.id ?? sessions.body.items[0]?.id;
    await call("DELETE", `/api/v1/admin/sessions/${sid}`, admin);
    await call("DELETE", "/api/v1/admin/sessions/nope", admin);
    await call("POST", "/api/v1/auth/logout", { token: mine.body.access_token });
    await call("DELETE", `/api/v1/admin/users/${uid}/sessions`, admin);
    await call("DELETE", `/api/v1/admin/users/${made.body.id}`, admin);
    await call("DELETE", `/api/v1/admin/users/${made.body.id}`, admin);
    await call("GET", "/api/v1/admin/collections", { token: ada });

    // ---- Realtime: a stream ends when its session does, so Prism (which waits for a whole answer) gets it.
    const other = await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password: "password456" } });
    const stream = call("GET", "/api/v1/realtime?subscribe=posts", { token: other.body.access_token });
    // The client id comes from a stream opened beside Prism (Prism hands on a stream's events only when it ends).
    const third = await call("POST", "/api/v1/auth/login", { body: { email: "ada@example.com", password: "password456" } });
    const direct = await SseClient.open(`${base}/api/v1/realtime`, { authorization: `Bearer ${third.body.access_token}` });
    await call("POST", "/api/v1/realtime", { token: third.body.access_token, body: { client_id: await direct.clientId(), subscriptions: ["posts", { collection: "posts", filter: "views:gt:1" }] } });
    direct.close();
    await call("POST", "/api/v1/realtime", { body: { client_id: "nope", subscriptions: ["posts"] } });
    await call("POST", "/api/v1/realtime", { ...bad, body: "[]" });
    await call("GET", "/api/v1/realtime?subscribe=nope");
    await t.req("POST", "/api/v1/auth/logout", { token: other.body.access_token });
    await stream;
    await call("POST", "/api/v1/auth/logout-all", { token: third.body.access_token });
    await call("POST", "/api/v1/auth/logout", { token: third.body.access_token });

    // ---- Admin: operations
    await call("GET", "/api/v1/admin/mail", admin);
    await call("POST", "/api/v1/admin/mail/test", { ...admin, body: { to: "ops@example.com" } });
    await call("POST", "/api/v1/admin/mail/test", { ...admin, body: { to: "nope" } });
    await call("POST", "/api/v1/admin/rotate-secret", admin);
    await call("GET", "/api/v1/admin/backup", admin);
    await smtp.close();
    // The SMTP server is gone: 503 (the document once said 502).
    expect((await call("POST", "/api/v1/admin/mail/test", { ...admin, body: { to: "ops@example.com" } })).status).toBe(503);

    // ---- The verdicts
    const problems: string[] = [];
    for (const e of exchanges) {
      const where = `${e.method} ${e.url} → ${e.status}`;
      if (e.prismError) problems.push(`${where}: Prism could not check it: ${e.prismError.slice(0, 300)}`);
      // Prism takes an undocumented status for `default`: only a 5xx may be answered by it.
      const responses = doc.paths[e.template]?.[e.method.toLowerCase()]?.responses ?? {};
      if (!(String(e.status) in responses) && e.status < 500) problems.push(`${where}: status not listed (${e.template})`);
      const seen = e.violations.filter((v) => v.location[0] === "response" || (!e.bad && v.location[0] === "request"));
      if (seen.length && !e.url.startsWith("/api/v1/canary"))
        problems.push(`${where}:\n    ${seen.map((v) => `${v.location.join(".")}: ${v.message}`).join("\n    ")}`);
    }
    expect(problems).toEqual([]);
    // The canary's list and projection are reported (its label is text, documented as a number): Prism did check.
    const canary = exchanges.filter((e) => e.url.startsWith("/api/v1/canary"));
    expect(canary.map((e) => [e.url, e.violations.some((v) => v.location[0] === "response")])).toEqual([
      ["/api/v1/canary", true],
      ["/api/v1/canary?fields=label", true],
    ]);
    // Every operation of the server's document, and of the posts document, was called.
    for (const document of [serverDoc, postsDoc]) {
      const called = new Set(exchanges.map((e) => `${e.method.toLowerCase()} ${templateOf(e.method, e.url, document)}`));
      const missing: string[] = [];
      for (const [path, item] of Object.entries<any>(document.paths)) for (const method of Object.keys(item)) if (!called.has(`${method} ${path}`)) missing.push(`${method} ${path}`);
      expect(missing).toEqual([]);
    }
  }, 300_000);
});
