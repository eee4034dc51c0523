import { afterAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createTestApp, type TestResponse } from "../helpers/app.ts";
import { checkSchema, resolveRef } from "../helpers/json-schema.ts";

const t = createTestApp();
afterAll(() => t.close());

let cached: any;
async function openapi(): Promise<any> {
  if (cached) return cached;
  const res = await t.req("GET", "/api/v1/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/json");
  cached = res.body;
  return cached;
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** Every `$ref` in a value, with where it was found. */
function refsOf(value: unknown, at = "$", out: [string, string][] = []): [string, string][] {
  if (Array.isArray(value)) value.forEach((v, i) => refsOf(v, `${at}[${i}]`, out));
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push([at, v]);
      else refsOf(v, `${at}.${k}`, out);
    }
  return out;
}

/** The documented operation a concrete request reaches: literal segments win over `{param}` ones, as in the router. */
function operationFor(doc: any, method: string, url: string): { template: string; op: any } {
  const path = url.split("?")[0]!;
  let best: { template: string; op: any; literal: number } | null = null;
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    const op = item[method.toLowerCase()];
    if (!op) continue;
    const re = new RegExp(`^${template.replace(/\{path\}$/, ".*").replace(/\{[^}]+\}/g, "[^/]+")}$`);
    if (!re.test(path)) continue;
    const literal = template.split("/").filter((s) => s && !s.startsWith("{")).length;
    if (!best || literal > best.literal) best = { template, op, literal };
  }
  if (!best) throw new Error(`no documented operation for ${method} ${path}`);
  return best;
}

/** Checks a response against its operation: a documented status (5xx may fall to `default`), and a body matching it. */
function expectDocumented(doc: any, method: string, url: string, res: TestResponse): void {
  const { template, op } = operationFor(doc, method, url);
  const where = `${method} ${template} → ${res.status}`;
  const response = op.responses[String(res.status)] ?? (res.status >= 500 ? op.responses.default : undefined);
  if (!response) throw new Error(`${where}: status not documented (${JSON.stringify(res.body).slice(0, 200)})`);
  const resolved = response.$ref ? resolveRef(doc, response.$ref) : response;
  const media = resolved.content?.["application/json"];
  if (!media) return;
  const problems = checkSchema(doc, media.schema, res.body);
  if (problems.length) throw new Error(`${where}: body does not match the document:\n  ${problems.slice(0, 8).join("\n  ")}`);
}

describe("the OpenAPI document", () => {
  test("GET /api/v1/openapi.json is public and is an OpenAPI 3.1 document", async () => {
    const doc = await openapi();
    expect(doc.openapi).toBe("3.1.0");
    expect(typeof doc.info.title).toBe("string");
    expect(typeof doc.info.version).toBe("string");
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["adminToken", "apiKey", "bearer"]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
    expect(doc.components.securitySchemes.adminToken).toMatchObject({ type: "apiKey", in: "header", name: "X-Admin-Token" });
  });

  test("every operation is well formed: unique operationId, responses with descriptions, declared path parameters, known security schemes", async () => {
    const doc = await openapi();
    const ids = new Set<string>();
    const schemes = new Set(Object.keys(doc.components.securitySchemes));
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      expect(path.startsWith("/")).toBe(true);
      for (const [method, op] of Object.entries<any>(item)) {
        const where = `${method} ${path}`;
        expect(METHODS).toContain(method);
        expect(typeof op.operationId).toBe("string");
        expect(ids.has(op.operationId)).toBe(false);
        ids.add(op.operationId);
        expect(typeof op.summary).toBe("string");
        expect(Object.keys(op.responses).length).toBeGreaterThan(0);
        for (const [status, r] of Object.entries<any>(op.responses)) {
          expect(status === "default" || /^[1-5]\d\d$/.test(status)).toBe(true);
          expect(typeof r.description).toBe("string");
        }
        const declared = (op.parameters ?? []).filter((p: any) => p.in === "path").map((p: any) => p.name).sort();
        const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
        if (JSON.stringify(declared) !== JSON.stringify(inPath)) throw new Error(`${where}: path parameters ${declared} ≠ ${inPath}`);
        for (const p of op.parameters ?? []) {
          expect(["path", "query", "header", "cookie"]).toContain(p.in);
          if (p.in === "path") expect(p.required).toBe(true);
        }
        for (const req of op.security ?? []) for (const name of Object.keys(req)) expect(schemes.has(name)).toBe(true);
        if (op.requestBody) expect(Object.keys(op.requestBody.content).length).toBeGreaterThan(0);
      }
    }
    expect(ids.size).toBeGreaterThan(50);
  });

  test("no two paths differ only in parameter names, and no operation repeats a parameter", async () => {
    const doc = await openapi();
    const shapes = Object.keys(doc.paths).map((p) => p.replace(/\{[^}]+\}/g, "{}"));
    expect(shapes.length).toBe(new Set(shapes).size);
    for (const item of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(item)) {
        const keys = (op.parameters ?? []).map((p: any) => `${p.in}:${p.name}`);
        expect(keys.length).toBe(new Set(keys).size);
      }
  });

  test("every $ref resolves", async () => {
    const doc = await openapi();
    const refs = refsOf(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const [at, ref] of refs) expect(() => resolveRef(doc, ref), at).not.toThrow();
  });

  test("every route the app serves has its path and method in the document (OPTIONS is the CORS preflight)", async () => {
    const doc = await openapi();
    const missing: string[] = [];
    for (const route of t.app.routes) {
      if (route.method === "OPTIONS") continue;
      // Routes of hook files of one and two segments are listed as the `/*` they are part of.
      const hidden = (route.hooks as { detail?: { hide?: boolean } } | undefined)?.detail?.hide;
      const path = hidden ? route.path.replace(/(\/:[^/]+)+$/, "/{path}") : route.path.replace(/:([^/]+)/g, "{$1}").replace(/\/\*$/, "/{path}");
      if (!doc.paths[path]?.[route.method.toLowerCase()]) missing.push(`${route.method} ${route.path}`);
    }
    expect(missing).toEqual([]);
  });

  test("security: the data API takes any credential or none, /auth/me a Bearer token, the admin API the admin credentials, login none", async () => {
    const doc = await openapi();
    const names = (op: any) => (op.security ?? []).flatMap((r: any) => Object.keys(r)).sort();
    expect(names(doc.paths["/api/v1/{collection}"].get)).toEqual(["adminToken", "apiKey", "bearer"]);
    expect(doc.paths["/api/v1/{collection}"].get.security).toContainEqual({});
    expect(names(doc.paths["/api/v1/auth/me"].get)).toEqual(["bearer"]);
    expect(names(doc.paths["/api/v1/admin/collections"].get)).toEqual(["adminToken", "bearer"]);
    expect(doc.paths["/api/v1/auth/login"].post.security).toEqual([]);
    expect(doc.paths["/api/v1/openapi.json"].get.security).toEqual([]);
  });
});

/** Sends a request through the app and checks its answer against the document. */
async function call(method: string, url: string, opts: { body?: unknown; token?: string | null; admin?: boolean; headers?: Record<string, string> } = {}) {
  const doc = await openapi();
  const res = await t.req(method, url, { body: opts.body, token: opts.admin ? ADMIN_SECRET : (opts.token ?? null), headers: opts.headers });
  expectDocumented(doc, method, url, res);
  return res;
}
const admin = { admin: true };

describe("real answers match the document", () => {
  test("the check refuses what the document does not allow (so a mismatch cannot pass unnoticed)", async () => {
    const doc = await openapi();
    const session = { $ref: "#/components/schemas/SessionBody" };
    expect(checkSchema(doc, session, { access_token: 1 }).length).toBeGreaterThan(0);
    expect(checkSchema(doc, { $ref: "#/components/schemas/ErrorBody" }, { errors: [] }).length).toBeGreaterThan(0);
    expect(checkSchema(doc, { $ref: "#/components/schemas/RecordList" }, { items: [{ _id: 5 }], total: null, next_cursor: null }).length).toBeGreaterThan(0);
    const created = await t.req("GET", "/api/v1/nope");
    expect(() => expectDocumented(doc, "GET", "/api/v1/health", created)).toThrow(/not documented/);
  });

  test("a representative run (success and main errors) gets only documented statuses and bodies", async () => {
    let token: string | null = null;

    expect((await call("GET", "/health")).status).toBe(200);
    expect((await call("GET", "/api/v1/health")).status).toBe(200);
    // Admin: collections, settings, indexes, full-text, relations, users.
    expect((await call("GET", "/api/v1/admin/collections")).status).toBe(401);
    expect((await call("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } })).status).toBe(200);
    expect((await call("POST", "/api/v1/admin/login", { body: { secret: "wrong" } })).status).toBe(401);
    expect((await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "posts", rules: { read: "public", create: "authenticated", update: "owner", delete: "owner" } } })).status).toBe(201);
    expect((await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "authors", rules: { read: "public", create: "public" } } })).status).toBe(201);
    expect((await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "posts" } })).status).toBe(409);
    expect((await call("POST", "/api/v1/admin/collections", { ...admin, body: [] })).status).toBe(400);
    expect((await call("GET", "/api/v1/admin/collections", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/collections/nope", admin)).status).toBe(404);
    expect((await call("PUT", "/api/v1/admin/collections/posts/rules", { ...admin, body: { field_rules: [{ field: "title", required: true }] } })).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/settings", admin)).status).toBe(200);
    expect((await call("PATCH", "/api/v1/admin/settings", { ...admin, body: { nope: 1 } })).status).toBe(400);

    // Auth.
    const reg = await call("POST", "/api/v1/auth/register", { body: { email: "doc@example.com", password: "password123" } });
    expect(reg.status).toBe(201);
    expect((await call("POST", "/api/v1/auth/register", { body: { email: "not-an-email", password: "x" } })).status).toBe(422);
    expect((await call("POST", "/api/v1/auth/register", { body: "[1]" })).status).toBe(400);
    expect((await call("POST", "/api/v1/auth/register", { body: "{nope" })).status).toBe(400);
    const login = await call("POST", "/api/v1/auth/login", { body: { email: "doc@example.com", password: "password123" } });
    expect(login.status).toBe(200);
    token = login.body.access_token;
    expect((await call("POST", "/api/v1/auth/login", { body: { email: "doc@example.com", password: "wrong-password" } })).status).toBe(401);
    expect((await call("GET", "/api/v1/auth/me", { token })).status).toBe(200);
    expect((await call("GET", "/api/v1/auth/me")).status).toBe(401);
    expect((await call("PATCH", "/api/v1/auth/me", { token, body: { metadata: { theme: "dark" } } })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/refresh", { body: { refresh_token: login.body.refresh_token } })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/refresh", { body: { refresh_token: "nope" } })).status).toBe(401);
    expect((await call("GET", "/api/v1/auth/2fa/status", { token })).status).toBe(200);
    const key = await call("POST", "/api/v1/auth/api-keys", { token, body: { name: "ci" } });
    expect(key.status).toBe(201);
    expect((await call("GET", "/api/v1/auth/api-keys", { token })).status).toBe(200);

    // Records.
    const created = await call("POST", "/api/v1/posts", { token, body: { title: "Hello", views: 3 } });
    expect(created.status).toBe(201);
    const id = created.body._id;
    expect((await call("POST", "/api/v1/posts", { token, body: { views: 4 } })).status).toBe(422);
    expect((await call("POST", "/api/v1/posts", { body: { title: "anon" } })).status).toBe(401);
    expect((await call("POST", "/api/v1/nope", { token, body: { title: "x" } })).status).toBe(404);
    expect((await call("GET", "/api/v1/posts?sort=-views&limit=10")).status).toBe(200);
    expect((await call("GET", "/api/v1/posts?after=" + id)).status).toBe(200);
    expect((await call("GET", "/api/v1/posts?filter=nope:eq:1")).status).toBe(400);
    expect((await call("GET", `/api/v1/posts/${id}`)).status).toBe(200);
    expect((await call("GET", "/api/v1/posts/missing")).status).toBe(404);
    expect((await call("PATCH", `/api/v1/posts/${id}`, { token, body: { views: 5 } })).status).toBe(200);
    expect((await call("PATCH", `/api/v1/posts/${id}`, { body: { views: 6 } })).status).toBe(401);
    expect((await call("GET", "/api/v1/posts/count")).status).toBe(200);
    expect((await call("GET", "/api/v1/posts/aggregate?fn=sum&field=views")).status).toBe(200);
    expect((await call("GET", "/api/v1/posts/aggregate?fn=count&group_by=title")).status).toBe(200);
    expect((await call("POST", "/api/v1/posts/bulk", { token, body: [{ title: "a" }, { title: "b" }] })).status).toBe(201);
    expect((await call("POST", "/api/v1/posts/bulk", { token, body: [{ title: "a" }, { views: 1 }] })).status).toBe(422);
    expect((await call("POST", "/api/v1/posts/batch", { token, body: { operations: [{ op: "create", data: { title: "c" } }] } })).status).toBe(200);
    expect((await call("POST", "/api/v1/posts/batch", { token, body: { operations: [{ op: "update", id: "missing", data: {} }] } })).status).toBe(400);
    expect((await call("DELETE", `/api/v1/posts/${id}`, { token })).status).toBe(200);
    expect((await call("POST", `/api/v1/posts/${id}/restore`, { token })).status).toBe(200);
    expect((await call("GET", `/api/v1/posts?filter=_owner_id:eq:x`, { headers: { "x-api-key": key.body.key } })).status).toBe(200);

    // Admin again: search, relations, users, ops.
    expect((await call("POST", "/api/v1/admin/collections/posts/indexes", { ...admin, body: { fields: ["views"] } })).status).toBe(201);
    expect((await call("POST", "/api/v1/admin/collections/posts/indexes", { ...admin, body: { fields: ["nope"] } })).status).toBe(400);
    expect((await call("GET", "/api/v1/admin/collections/posts/indexes", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/collections/posts/stats", admin)).status).toBe(200);
    const rel = await call("POST", "/api/v1/admin/relations", { ...admin, body: { from_col: "posts", from_field: "author", to_col: "authors", type: "one" } });
    expect(rel.status).toBe(201);
    expect((await call("GET", "/api/v1/admin/relations", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/users?limit=5", admin)).status).toBe(200);
    expect((await call("GET", `/api/v1/admin/users/${reg.body.user.id}`, admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/users/nobody", admin)).status).toBe(404);
    expect((await call("GET", "/api/v1/admin/mail", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/collections", { token })).status).toBe(403);

    // Realtime: an unknown client id is 404.
    expect((await call("POST", "/api/v1/realtime", { body: { client_id: "nope", subscriptions: ["posts"] } })).status).toBe(404);
    expect((await call("POST", "/api/v1/realtime", { body: "[]" })).status).toBe(400);

    // Logout.
    expect((await call("POST", "/api/v1/auth/logout", { token })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/logout", { token })).status).toBe(401);
  });

  test("the remaining endpoints (accounts, 2FA, API keys, admin users and sessions, ops, OAuth, pages) answer as documented", async () => {
    const password = "password123";
    const reg = await call("POST", "/api/v1/auth/register", { body: { email: "rest@example.com", password } });
    const token = reg.body.access_token as string;
    const uid = reg.body.user.id as string;
    // Mail flows: each answers ok whether or not the account exists; bad tokens are refused.
    expect((await call("POST", "/api/v1/auth/magic-link", { body: { email: "rest@example.com" } })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/magic-link/verify", { body: { token: "nope" } })).status).toBe(401);
    expect((await call("POST", "/api/v1/auth/forgot-password", { body: { email: "nobody@example.com" } })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/reset-password", { body: { token: "nope", password: "new-password-1" } })).status).toBe(400);
    expect((await call("POST", "/api/v1/auth/verify-email", { body: { token: "nope" } })).status).toBe(400);
    expect((await call("POST", "/api/v1/auth/resend-verification", { token })).status).toBe(200);
    // 2FA without finishing it; verify with a bad token.
    expect((await call("POST", "/api/v1/auth/2fa/setup", { token })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/2fa/enable", { token, body: { code: "000000" } })).status).toBe(400);
    expect((await call("DELETE", "/api/v1/auth/2fa/disable", { token, body: { code: "000000" } })).status).toBe(409);
    expect((await call("POST", "/api/v1/auth/2fa/verify", { body: { totp_token: "nope", code: "000000" } })).status).toBe(401);
    // API keys.
    const key = await call("POST", "/api/v1/auth/api-keys", { token, body: { name: "k" } });
    expect((await call("DELETE", `/api/v1/auth/api-keys/${key.body.id}`, { token })).status).toBe(200);
    expect((await call("DELETE", "/api/v1/auth/api-keys/nope", { token })).status).toBe(404);
    // OAuth: no provider is configured here.
    expect((await call("GET", "/api/v1/auth/oauth/accounts", { token })).status).toBe(200);
    expect((await call("GET", "/api/v1/auth/oauth/github")).status).toBeOneOf([403, 404]);
    expect((await call("GET", "/api/v1/auth/oauth/nope/callback?code=x&state=y")).status).toBeOneOf([302, 400, 403, 404]);
    expect((await call("DELETE", "/api/v1/auth/oauth/github", { token })).status).toBeOneOf([403, 404, 409]);
    // Admin: users and sessions.
    const made = await call("POST", "/api/v1/admin/users", { admin: true, body: { email: "made@example.com", password, roles: ["editor"] } });
    expect(made.status).toBe(201);
    expect((await call("POST", "/api/v1/admin/users", { admin: true, body: { email: "made@example.com" } })).status).toBe(409);
    expect((await call("PATCH", `/api/v1/admin/users/${made.body.id}`, { admin: true, body: { is_verified: true } })).status).toBe(200);
    expect((await call("GET", `/api/v1/admin/users/${uid}/sessions`, { admin: true })).status).toBe(200);
    expect((await call("GET", `/api/v1/admin/users/${uid}/security`, { admin: true })).status).toBe(200);
    expect((await call("GET", `/api/v1/admin/users/${uid}/api-keys`, { admin: true })).status).toBe(200);
    expect((await call("DELETE", `/api/v1/admin/users/${uid}/api-keys/nope`, { admin: true })).status).toBe(404);
    expect((await call("POST", `/api/v1/admin/users/${uid}/unlock`, { admin: true })).status).toBe(200);
    expect((await call("POST", `/api/v1/admin/users/${uid}/reset-2fa`, { admin: true })).status).toBe(200);
    expect((await call("POST", `/api/v1/admin/users/${uid}/impersonate`, { admin: true })).status).toBe(200);
    expect((await call("DELETE", "/api/v1/admin/sessions/nope", { admin: true })).status).toBe(404);
    expect((await call("DELETE", `/api/v1/admin/users/${uid}/sessions`, { admin: true })).status).toBe(200);
    expect((await call("DELETE", `/api/v1/admin/users/${made.body.id}`, { admin: true })).status).toBe(200);
    expect((await call("POST", "/api/v1/auth/logout-all", { token })).status).toBe(401);
    // Admin: collections, records, indexes, relations, ops.
    await call("POST", "/api/v1/admin/collections", { admin: true, body: { name: "rest_a", rules: { read: "public", create: "public" } } });
    await call("POST", "/api/v1/admin/collections", { admin: true, body: { name: "rest_b", rules: { read: "public", create: "public" } } });
    expect((await call("PATCH", "/api/v1/admin/collections/rest_a", { admin: true, body: { rules: { update: "public" } } })).status).toBe(200);
    expect((await call("PATCH", "/api/v1/admin/collections/rest_a", { admin: true, body: { rules: { update: "nope" } } })).status).toBe(400);
    const rec = await call("POST", "/api/v1/rest_a", { body: { n: 1 } });
    expect((await call("DELETE", `/api/v1/admin/collections/rest_a/records/${rec.body._id}`, { admin: true })).status).toBe(200);
    const idx = await call("POST", "/api/v1/admin/collections/rest_a/indexes", { admin: true, body: { fields: ["n"], unique: true } });
    expect((await call("DELETE", `/api/v1/admin/collections/rest_a/indexes/${idx.body.name}`, { admin: true })).status).toBe(200);
    expect((await call("DELETE", "/api/v1/admin/collections/rest_a/indexes/nope", { admin: true })).status).toBe(404);
    const rel = await call("POST", "/api/v1/admin/relations", { admin: true, body: { from_col: "rest_a", from_field: "b", to_col: "rest_b", type: "one" } });
    expect((await call("POST", "/api/v1/admin/relations", { admin: true, body: { from_col: "rest_a", from_field: "b", to_col: "rest_b", type: "one" } })).status).toBe(409);
    expect((await call("DELETE", `/api/v1/admin/relations/${rel.body.id}`, { admin: true })).status).toBe(200);
    expect((await call("DELETE", "/api/v1/admin/relations/nope", { admin: true })).status).toBe(404);
    // With ADMIN_SECRET set, the environment names the secret.
    expect((await call("POST", "/api/v1/admin/rotate-secret", { admin: true })).status).toBe(409);
    expect((await call("POST", "/api/v1/admin/mail/test", { admin: true, body: { to: "ops@example.com" } })).status).toBe(200);
    expect((await call("POST", "/api/v1/admin/mail/test", { admin: true, body: { to: "nope" } })).status).toBe(422);
    expect((await call("GET", "/api/v1/openapi.json")).status).toBe(200);
  });

  test("full-text admin and collection drop answers match the document", async () => {
    expect((await call("POST", "/api/v1/admin/collections", { ...admin, body: { name: "notes", rules: { read: "public" } } })).status).toBe(201);
    expect((await call("POST", "/api/v1/admin/collections/notes/fts", admin)).status).toBe(201);
    expect((await call("POST", "/api/v1/admin/collections/notes/fts", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/collections/notes/fts", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/notes?search=hello")).status).toBe(200);
    expect((await call("GET", "/api/v1/notes?search=%22")).status).toBe(400);
    expect((await call("DELETE", "/api/v1/admin/collections/notes/fts", admin)).status).toBe(200);
    expect((await call("GET", "/api/v1/admin/collections/nope/fts", admin)).status).toBe(404);
    expect((await call("DELETE", "/api/v1/admin/collections/notes", admin)).status).toBe(200);
    expect((await call("DELETE", "/api/v1/admin/collections/notes", admin)).status).toBe(404);
  });
});

describe("the document of one collection (?collection=, admin)", () => {
  test("needs admin credentials and a known collection", async () => {
    expect((await t.req("GET", "/api/v1/openapi.json?collection=docs_auth")).status).toBe(401);
    expect((await t.req("GET", "/api/v1/openapi.json?collection=nope", { token: ADMIN_SECRET })).status).toBe(404);
    const reg = await t.req("POST", "/api/v1/auth/register", { body: { email: "narrow@example.com", password: "password123" } });
    expect((await t.req("GET", "/api/v1/openapi.json?collection=docs_auth", { token: reg.body.access_token })).status).toBe(403);
  });

  test("spells the collection's paths with its name and describes its records with their fields; real answers match", async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "doc_items", rules: { read: "public", create: "public" } })).status).toBe(201);
    const created = await t.req("POST", "/api/v1/doc_items", { body: { title: "a", price: 2.5, done: false, tags: ["x"] } });
    expect(created.status).toBe(201);
    const res = await t.req("GET", "/api/v1/openapi.json?collection=doc_items", { token: ADMIN_SECRET });
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/api/v1/doc_items",
      "/api/v1/doc_items/aggregate",
      "/api/v1/doc_items/batch",
      "/api/v1/doc_items/bulk",
      "/api/v1/doc_items/count",
      "/api/v1/doc_items/{id}",
      "/api/v1/doc_items/{id}/restore",
    ]);
    expect(JSON.stringify(doc.paths)).not.toContain("{collection}");
    const record = doc.components.schemas.DocItemsRecord;
    expect(record.properties.title).toEqual({ type: ["string", "null"] });
    expect(record.properties.price).toEqual({ type: ["number", "null"] });
    expect(record.properties.done).toEqual({ type: ["boolean", "null"] });
    // A JSON field: any object (its keys readable by a generated client) or array.
    expect(record.properties.tags).toEqual({ type: ["object", "array", "null"], additionalProperties: true, items: {} });
    expect(record.required).toEqual(expect.arrayContaining(["_id", "title", "price", "done", "tags"]));
    expect(doc.paths["/api/v1/doc_items"].post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/DocItemsData" });
    for (const [, ref] of refsOf(doc)) expect(() => resolveRef(doc, ref)).not.toThrow();

    const one = await t.req("GET", `/api/v1/doc_items/${created.body._id}`);
    expect(checkSchema(doc, doc.paths["/api/v1/doc_items/{id}"].get.responses["200"].content["application/json"].schema, one.body)).toEqual([]);
    const list = await t.req("GET", "/api/v1/doc_items");
    expect(checkSchema(doc, doc.paths["/api/v1/doc_items"].get.responses["200"].content["application/json"].schema, list.body)).toEqual([]);
    expect(checkSchema(doc, { $ref: "#/components/schemas/DocItemsRecord" }, { ...one.body, price: "cheap" }).length).toBeGreaterThan(0);
  });

  test("describes relation fields (one: an id; many, many_via: id lists), _expand with the embedded records, and fields= projections", async () => {
    for (const name of ["rel_people", "rel_posts", "rel_tags"])
      expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public", create: "public" } })).status).toBe(201);
    for (const rel of [
      { from_col: "rel_posts", from_field: "author", to_col: "rel_people", type: "one" },
      { from_col: "rel_people", from_field: "posts", to_col: "rel_posts", type: "many", to_field: "author" },
      { from_col: "rel_posts", from_field: "tags", to_col: "rel_tags", type: "many_via" },
    ])
      expect((await t.admin("POST", "/api/v1/admin/relations", rel)).status).toBe(201);
    const person = await t.req("POST", "/api/v1/rel_people", { body: { name: "Ada", profile: { city: "London" } } });
    const tag = await t.req("POST", "/api/v1/rel_tags", { body: { label: "intro" } });
    const post = await t.req("POST", "/api/v1/rel_posts", { body: { title: "Hi", author: person.body._id, tags: [tag.body._id] } });
    expect(post.status).toBe(201);
    const posts = (await t.req("GET", "/api/v1/openapi.json?collection=rel_posts", { token: ADMIN_SECRET })).body;
    const people = (await t.req("GET", "/api/v1/openapi.json?collection=rel_people", { token: ADMIN_SECRET })).body;
    const s = posts.components.schemas;
    expect(s.RelPostsRecord.properties.author.type).toEqual(["string", "null"]);
    expect(s.RelPostsRecord.properties.tags).toMatchObject({ type: "array", items: { type: "string" } });
    expect(s.RelPostsRecord.required).toEqual(expect.arrayContaining(["author", "tags", "title"]));
    expect(s.RelPostsRecord.properties._expand.properties.author).toEqual({ anyOf: [{ $ref: "#/components/schemas/RelPeopleExpanded" }, { type: "null" }] });
    expect(s.RelPostsRecord.properties._expand.properties.tags).toEqual({ type: ["array", "null"], items: { $ref: "#/components/schemas/RelTagsExpanded" } });
    expect(s.RelPeopleExpanded.properties.profile.additionalProperties).toBe(true);
    // An embedded record carries no relation lists of its own.
    expect(Object.keys(people.components.schemas.RelPostsExpanded.properties)).not.toContain("tags");
    expect(people.components.schemas.RelPeopleRecord.properties.posts).toMatchObject({ type: ["array", "null"], items: { type: "string" } });
    expect(s.RelPostsData.properties.tags).toMatchObject({ type: "array" });
    expect(s.RelPostsProjection.required).toEqual(["_id"]);
    for (const [, ref] of refsOf(posts)) expect(() => resolveRef(posts, ref)).not.toThrow();

    const get = (doc: any, path: string) => doc.paths[path].get.responses["200"].content["application/json"].schema;
    const answers: [any, string, string][] = [
      [posts, "/api/v1/rel_posts/{id}", `/api/v1/rel_posts/${post.body._id}?expand=author,tags`],
      [posts, "/api/v1/rel_posts/{id}", `/api/v1/rel_posts/${post.body._id}?fields=title&expand=tags`],
      [posts, "/api/v1/rel_posts", "/api/v1/rel_posts?fields=author"],
      [people, "/api/v1/rel_people/{id}", `/api/v1/rel_people/${person.body._id}?expand=posts`],
      [people, "/api/v1/rel_people", "/api/v1/rel_people?expand=posts"],
    ];
    for (const [doc, path, url] of answers) {
      const res = await t.req("GET", url);
      expect(res.status).toBe(200);
      expect([url, checkSchema(doc, get(doc, path), res.body)]).toEqual([url, []]);
    }
    // The whole-record schema refuses a projection, the projection a wrong type.
    const projected = (await t.req("GET", `/api/v1/rel_posts/${post.body._id}?fields=title`)).body;
    expect(checkSchema(posts, { $ref: "#/components/schemas/RelPostsRecord" }, projected).length).toBeGreaterThan(0);
    expect(checkSchema(posts, { $ref: "#/components/schemas/RelPostsProjection" }, { ...projected, title: 1 }).length).toBeGreaterThan(0);
  });
});

describe("answers once left untyped", () => {
  test("2FA enable and disable, a user's security state, mail status, aggregates and batch results have their shapes", async () => {
    const doc = await openapi();
    const ok = (path: string, method: string) => doc.paths[path][method].responses[Object.keys(doc.paths[path][method].responses)[0]!];
    const schemaOf = (path: string, method: string) => {
      const s = ok(path, method).content["application/json"].schema;
      return s.$ref ? resolveRef(doc, s.$ref) : s;
    };
    expect(schemaOf("/api/v1/auth/2fa/enable", "post").properties.recovery_codes).toMatchObject({ type: "array", items: { type: "string" } });
    expect(schemaOf("/api/v1/auth/2fa/disable", "delete").properties.enabled).toMatchObject({ const: false });
    for (const [path, method] of [["/api/v1/admin/users/{id}/security", "get"], ["/api/v1/admin/users/{id}/reset-2fa", "post"]])
      expect(Object.keys(schemaOf(path!, method!).properties).sort()).toEqual(["api_keys", "email", "id", "locked_until", "oauth_accounts", "totp_enabled"]);
    expect(Object.keys(schemaOf("/api/v1/admin/mail", "get").properties).sort()).toEqual(["from", "sender_name", "smtp_server", "transport"]);
    const aggregate = schemaOf("/api/v1/{collection}/aggregate", "get");
    expect(aggregate.anyOf[0].properties.value.anyOf.length).toBeGreaterThan(1);
    const batch = schemaOf("/api/v1/{collection}/batch", "post");
    expect(batch.properties.results.items.anyOf.map((s: any) => s.properties.op.const)).toEqual(["create", "update", "delete"]);
    expect(Object.keys(schemaOf("/api/v1/admin/settings", "get").properties)).toContain("registration_open");
    // The statuses the routes answer: 503 when the SMTP server refuses a test mail (502 is never sent), the SQLite file as such.
    expect(Object.keys(doc.paths["/api/v1/admin/mail/test"].post.responses)).toContain("503");
    expect(Object.keys(doc.paths["/api/v1/admin/mail/test"].post.responses)).not.toContain("502");
    expect(Object.keys(ok("/api/v1/admin/backup", "get").content)).toEqual(["application/vnd.sqlite3"]);
    expect(doc.paths["/_"].get.responses["308"].headers.Location).toBeDefined();
    expect(doc.paths["/_/"].get.responses["200"].content["text/html"]).toBeDefined();
    // A boolean in the query string is also 1 or 0.
    const total = doc.paths["/api/v1/{collection}"].get.parameters.find((p: any) => p.name === "total");
    expect(total.schema.anyOf).toEqual([{ type: "boolean" }, { type: "string", enum: ["1", "0"] }]);
  });
});
