import { afterEach, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir, type CliResult } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// A CI pipeline's view: the binary sets everything up on the data directory of a server that
// keeps running, and each change is proven through that server's HTTP API, without a restart.
// Every test has its own data directory and server (the binary is built once) and sets up what it needs.
setDefaultTimeout(60_000);

let bin: string;
let dir: string;
let server: ServerProcess;
const adminSecret = ADMIN_SECRET;

const cli = async (args: string[], opts: { stdin?: string } = {}): Promise<CliResult> => {
  const r = await runCli(bin, ["--data", dir, ...args], opts);
  return r;
};
/** Runs a command that must succeed and returns its --json output. */
const ok = async (args: string[], opts: { stdin?: string } = {}): Promise<any> => {
  const r = await cli([...args, "--json"], opts);
  if (r.code !== 0) throw new Error(`baas ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.json();
};

async function http(method: string, path: string, opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(server.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
const admin = (method: string, path: string, body?: unknown) => http(method, `/api/v1/admin${path}`, { body, token: adminSecret });
const login = async (email: string, password: string) => {
  const r = await http("POST", "/api/v1/auth/login", { body: { email, password } });
  expect(r.status).toBe(200);
  return r.body as { access_token: string; refresh_token: string; expires_in: number; user: { id: string; roles: string[] } };
};

beforeAll(async () => {
  bin = await buildBinary();
});
beforeEach(async () => {
  dir = tempDataDir();
  server = await spawnServer({ dir, cmd: [bin], env: { LOCKOUT_MAX_ATTEMPTS: "3" } });
});
afterEach(async () => {
  await server?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** The posts collection as the CLI creates it: public read, signed-in create, owner update, moderator delete. */
const createPosts = () =>
  ok(["collections", "create", "posts", "--read", "public", "--create", "authenticated", "--update", "owner", "--delete", "role:moderator"]);
/** ada (a verified moderator) or bob (a plain user), created by the CLI. */
const createUser = (who: "ada" | "bob") =>
  who === "ada"
    ? ok(["users", "create", "ada@example.com", "--password-stdin", "--role", "moderator", "--verified"], { stdin: "ada-password-1\n" })
    : ok(["users", "create", "bob@example.com", "--password-stdin"], { stdin: "bob-password-1" });
/** A post by bob through the server. */
async function postByBob(body: Record<string, unknown>) {
  const { access_token } = await login("bob@example.com", "bob-password-1");
  const res = await http("POST", "/api/v1/posts", { token: access_token, body });
  expect(res.status).toBe(201);
  return res.body;
}
/** comments.post, a one relation to posts with cascade, made by the CLI. */
async function createComments() {
  await ok(["collections", "create", "comments", "--read", "public", "--create", "authenticated"]);
  return ok(["relations", "create", "comments.post", "posts", "--type", "one", "--on-delete", "cascade"]);
}

describe("a CI script sets up a running server through the CLI", () => {
  test("collections and rules created by the CLI are served at once", async () => {
    await createPosts();
    const r = await admin("GET", "/collections/posts");
    expect(r.status).toBe(200);
    expect(r.body.rules).toEqual({ read: "public", create: "authenticated", update: "owner", delete: { role: "moderator" } });
    expect((await http("GET", "/api/v1/posts")).status).toBe(200);
    expect((await http("POST", "/api/v1/posts", { body: { title: "anon" } })).status).toBe(401);
  });

  test("users with roles created by the CLI can log in and carry their roles", async () => {
    const ada = await createUser("ada");
    expect(ada).toMatchObject({ email: "ada@example.com", roles: ["moderator"], is_verified: true });
    await createUser("bob");
    const s = await login("ada@example.com", "ada-password-1");
    expect(s.user.roles).toEqual(["moderator"]);
    const listed = await admin("GET", "/users?search=example.com");
    expect(listed.body.total).toBe(2);
  });

  test("field rules set by the CLI validate records on the server", async () => {
    await createPosts();
    await createUser("bob");
    const rulesFile = join(dir, "field-rules.json");
    writeFileSync(rulesFile, JSON.stringify([{ field: "title", required: true, min: 3 }]));
    await ok(["collections", "rules", "posts", "--field-rules", `@${rulesFile}`]);
    const { access_token } = await login("bob@example.com", "bob-password-1");
    const bad = await http("POST", "/api/v1/posts", { token: access_token, body: { title: "ab" } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ field: "title", rule: "min", message: '"title" must be at least 3 characters.' }]);
    const good = await http("POST", "/api/v1/posts", { token: access_token, body: { title: "hello world" } });
    expect(good.status).toBe(201);
    expect((await ok(["stats", "posts"])).row_count).toBe(1);
  });

  test("a relation created by the CLI is checked and expanded by the server", async () => {
    await createPosts();
    await createUser("bob");
    const post = await postByBob({ title: "hello world" });
    const rel = await createComments();
    expect((await admin("GET", "/relations")).body.items).toEqual([rel]);
    const { access_token } = await login("bob@example.com", "bob-password-1");
    const dangling = await http("POST", "/api/v1/comments", { token: access_token, body: { text: "hi", post: "no-such-post" } });
    expect(dangling.status).toBe(422);
    expect(dangling.body.errors[0]).toMatchObject({ field: "post", rule: "relation" });
    const made = await http("POST", "/api/v1/comments", { token: access_token, body: { text: "hi", post: post._id } });
    expect(made.status).toBe(201);
    const listed = await http("GET", "/api/v1/comments?expand=post");
    expect(listed.body.items[0]._expand.post.title).toBe("hello world");
  });

  test("a unique index and full-text search set up by the CLI work on the server", async () => {
    await createPosts();
    await createUser("bob");
    await postByBob({ title: "hello world" });
    const { access_token } = await login("bob@example.com", "bob-password-1");
    const first = await http("POST", "/api/v1/posts", { token: access_token, body: { title: "searchable banana bread", slug: "banana" } });
    expect(first.status).toBe(201);
    await ok(["indexes", "create", "posts", "slug", "--unique"]);
    expect((await admin("GET", "/collections/posts/indexes")).body.items).toEqual([{ name: "idx_posts_slug", fields: ["slug"], unique: true }]);
    const dup = await http("POST", "/api/v1/posts", { token: access_token, body: { title: "another one", slug: "banana" } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("unique_violation");
    expect((await http("GET", "/api/v1/posts?search=banana")).status).toBe(400);
    const fts = await ok(["fts", "enable", "posts"]);
    expect(fts).toMatchObject({ enabled: true, indexed_records: 2 });
    const found = await http("GET", "/api/v1/posts?search=banana");
    expect(found.status).toBe(200);
    expect(found.body.items.map((p: { _id: string }) => p._id)).toEqual([first.body._id]);
    expect((await http("DELETE", `/api/v1/posts/${first.body._id}`, { token: adminSecret })).status).toBe(200);
  });

  test("a role rule is enforced, and a role granted by the CLI applies from the next login", async () => {
    await createPosts();
    await createUser("bob");
    const bob = await login("bob@example.com", "bob-password-1");
    const post = (await http("POST", "/api/v1/posts", { token: bob.access_token, body: { title: "bob's post" } })).body;
    expect((await http("DELETE", `/api/v1/posts/${post._id}`, { token: bob.access_token })).status).toBe(403);
    const updated = await ok(["users", "roles", "bob@example.com", "moderator", "writer"]);
    expect(updated.roles).toEqual(["moderator", "writer"]);
    const again = await login("bob@example.com", "bob-password-1");
    expect(again.user.roles).toEqual(["moderator", "writer"]);
    expect((await http("DELETE", `/api/v1/posts/${post._id}`, { token: again.access_token })).status).toBe(200);
  });

  test("metadata set by the CLI is what the user sees", async () => {
    await createUser("bob");
    await ok(["users", "metadata", "bob@example.com", '{"plan":"pro","team":{"id":7}}']);
    const bob = await login("bob@example.com", "bob-password-1");
    const me = await http("GET", "/api/v1/auth/me", { token: bob.access_token });
    expect(me.body.metadata).toEqual({ plan: "pro", team: { id: 7 } });
  });

  test("settings changed by the CLI apply to the running server", async () => {
    await createUser("ada");
    await ok(["settings", "set", "registration_open", "false"]);
    const reg = await http("POST", "/api/v1/auth/register", { body: { email: "carol@example.com", password: "carol-password-1" } });
    expect(reg.status).toBe(403);
    expect(reg.body.code).toBe("registration_closed");
    await ok(["settings", "set", "access_token_ttl_seconds", "600"]);
    expect((await login("ada@example.com", "ada-password-1")).expires_in).toBe(600);
    expect((await admin("GET", "/settings")).body).toMatchObject({ registration_open: false, access_token_ttl_seconds: 600 });
  });

  test("settings list --json is the body of GET /admin/settings, OAuth redirect addresses included", async () => {
    const api = (await admin("GET", "/settings")).body;
    expect(api.oauth_redirect_urls.oidc).toBe(`http://localhost:${new URL(server.url).port}/api/v1/auth/oauth/oidc/callback`);
    expect(await ok(["settings", "list"])).toEqual(api);
  });

  test("revoke-sessions signs a user out of the running server at once", async () => {
    await createUser("ada");
    const ada = await login("ada@example.com", "ada-password-1");
    expect((await http("GET", "/api/v1/auth/me", { token: ada.access_token })).status).toBe(200);
    const r = await ok(["users", "revoke-sessions", "ada@example.com"]);
    expect(r.ok).toBe(true);
    expect(r.sessions_revoked).toBeGreaterThanOrEqual(1);
    expect((await http("GET", "/api/v1/auth/me", { token: ada.access_token })).status).toBe(401);
    expect((await http("POST", "/api/v1/auth/refresh", { body: { refresh_token: ada.refresh_token } })).status).toBe(401);
  });

  test("unlock lifts a lockout the server imposed", async () => {
    await createUser("bob");
    for (let i = 0; i < 3; i++) await http("POST", "/api/v1/auth/login", { body: { email: "bob@example.com", password: "wrong-password" } });
    const locked = await http("POST", "/api/v1/auth/login", { body: { email: "bob@example.com", password: "bob-password-1" } });
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("account_locked");
    await ok(["users", "unlock", "bob@example.com"]);
    await login("bob@example.com", "bob-password-1");
  });

  // A backup is a copy of the SQLite file; on PostgreSQL it is refused (test/cli/backup-postgres.test.ts).
  test.skipIf(onPostgres)("a backup taken while the server runs is a consistent copy", async () => {
    await createPosts();
    await createUser("bob");
    await postByBob({ title: "kept" });
    const gone = await postByBob({ title: "deleted" });
    expect((await http("DELETE", `/api/v1/posts/${gone._id}`, { token: adminSecret })).status).toBe(200);
    const file = join(dir, "backup.db");
    await ok(["backup", file]);
    const copy = new Database(file, { readonly: true });
    expect(copy.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    expect(copy.query("SELECT COUNT(*) AS n FROM posts WHERE _deleted_at IS NULL").get()).toEqual({ n: 1 });
    copy.close();
  });

  test("rotate-secret refuses while the server runs with ADMIN_SECRET, which stays the secret", async () => {
    const r = await cli(["admin", "rotate-secret"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("ADMIN_SECRET is set for the server of this data directory");
    expect((await admin("GET", "/collections")).status).toBe(200);
  });

  test("deleting a user and a collection through the CLI is seen by the server", async () => {
    await createPosts();
    await createUser("bob");
    await createComments();
    await ok(["users", "delete", "bob@example.com", "--yes"]);
    const r = await http("POST", "/api/v1/auth/login", { body: { email: "bob@example.com", password: "bob-password-1" } });
    expect(r.status).toBe(401);
    await ok(["collections", "delete", "posts", "--yes"]);
    expect((await http("GET", "/api/v1/posts")).status).toBe(404);
    expect((await admin("GET", "/collections")).body.items.map((c: { name: string }) => c.name)).toEqual(["comments"]);
    expect((await admin("GET", "/relations")).body).toEqual({ items: [] });
  });
});
