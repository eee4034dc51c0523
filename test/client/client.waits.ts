import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { TOTP, URI } from "otpauth";
import { BaasError, createClient, type BaasClient, type SessionStorage, type SystemFields } from "../../client/src/index.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { removeWhenGone } from "../helpers/when-gone.ts";

// Named `*.waits.ts`: most of this file's time goes waiting for the access token to expire, twice (its shortest
// lifetime is 10 s), so `npm test` runs it on each engine in a process of its own beside the suites
// (scripts/test.ts); a plain `bun test` does not pick it up. By hand: `npx bun test ./test/client/client.waits.ts`.

setDefaultTimeout(60_000);

const ROOT = resolve(import.meta.dir, "../..");

interface Author extends SystemFields {
  name: string | null;
}
interface Post extends SystemFields {
  title: string | null;
  views: number | null;
  author: string | null;
  _expand?: { author?: Author | null };
}

let srv: ServerProcess;

/** A client with its own storage, recording every request it sends as `METHOD path`. */
function newClient() {
  const sent: string[] = [];
  const store = new Map<string, string>();
  const storage: SessionStorage = {
    getItem: (k) => store.get(k) ?? null,
    setItem: (k, v) => void store.set(k, v),
    removeItem: (k) => void store.delete(k),
  };
  const client = createClient(srv.url, {
    storage,
    fetch: (url, init) => {
      sent.push(`${init.method} ${new URL(url).pathname}`);
      return fetch(url, init);
    },
  });
  const refreshes = () => sent.filter((s) => s === "POST /api/v1/auth/refresh").length;
  return { client, sent, store, storage, refreshes };
}

let users = 0;
const newEmail = () => `user${++users}@example.com`;

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${srv.url}/api/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_SECRET}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Status of `GET /auth/me` with this access token, sent by hand (not through the client). */
async function meStatus(token: string): Promise<number> {
  return (await fetch(`${srv.url}/api/v1/auth/me`, { headers: { Authorization: `Bearer ${token}` } })).status;
}

/** Waits until the client's stored access token has expired on the server (the shortest lifetime is 10 s). */
async function waitForExpiry(client: BaasClient): Promise<string> {
  const token = (await client.auth.session())!.access_token;
  await waitFor(async () => (await meStatus(token)) === 401, { timeoutMs: 20_000, intervalMs: 250, what: "the access token to expire" });
  return token;
}

/** The statuses the server logged for `POST /auth/refresh`, in order. */
function serverRefreshStatuses(): string[] {
  return [...srv.stderr().matchAll(/path=\/api\/v1\/auth\/refresh status=(\d+)/g)].map((m) => m[1]);
}

// One server for the file; every test signs up its own user, and posts are read under an owner
// rule, so each test sees only its own records and the tests pass in any order.
beforeAll(async () => {
  // A route file in the data directory's hooks folder, for `fn`.
  const dir = mkdtempSync(join(tmpdir(), "baas-client-"));
  mkdirSync(join(dir, "hooks"));
  writeFileSync(
    join(dir, "hooks", "echo.ts"),
    `export const routes = [{ method: "POST", path: "/echo/:id", handler: ({ params, query, body, auth }) => ({ id: params.id, query, body, user: auth?.email ?? null }) }];\n`,
  );
  removeWhenGone(dir);
  srv = await spawnServer({ dir });
  await admin("POST", "/admin/collections", { name: "authors" });
  await admin("POST", "/admin/collections", { name: "posts", rules: { read: "owner" } });
  await admin("POST", "/admin/relations", { from_col: "posts", from_field: "author", to_col: "authors", type: "one" });
  await admin("PATCH", "/admin/settings", { access_token_ttl_seconds: 10 });
  // The fields get their types here, whichever test runs first (an admin's record: no user reads it under the owner rule).
  await admin("POST", "/authors", { name: "seed" });
  await admin("POST", "/posts", { title: "seed", views: 0 });
});
afterAll(async () => {
  await srv?.cleanup();
});

describe("the client against a real server", () => {
  test("fn calls a route of the hook files; exportData and deleteAccount (a wrong password is not retried)", async () => {
    const { client, sent, refreshes } = newClient();
    const email = newEmail();
    const reg = await client.auth.register(email, "correct horse");
    expect(await client.fn("POST", "/echo/x1", { body: { a: 1 }, query: { q: "v" } })).toEqual({ id: "x1", query: { q: "v" }, body: { a: 1 }, user: email });
    const post = await client.collection<Post>("posts").create({ title: "mine", views: 1 });
    const data = await client.auth.exportData();
    expect(data.user.id).toBe(reg.user.id);
    expect(data.collections.posts?.map((p) => p._id)).toEqual([post._id]);
    const before = sent.length;
    const wrong = await client.auth.deleteAccount({ password: "not the password" }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(BaasError);
    expect([(wrong as BaasError).status, (wrong as BaasError).code]).toEqual([401, "invalid_credentials"]);
    expect(sent.slice(before)).toEqual(["DELETE /api/v1/auth/me"]);
    expect(refreshes()).toBe(0);
    expect(await client.auth.deleteAccount({ password: "correct horse" })).toEqual({ ok: true, deleted: { posts: 1 } });
    expect(await client.auth.session()).toBeNull();
    expect(await meStatus(reg.access_token)).toBe(401);
  });

  test("register, login, create, list with filter/sort/cursor, expand, 401, automatic refresh, 20 parallel calls with one refresh, logout", async () => {
    const { client, store, refreshes } = newClient();
    const email = newEmail();

    // register → login
    const reg = await client.auth.register(email.toUpperCase(), "correct horse");
    expect(reg.token_type).toBe("Bearer");
    expect(reg.expires_in).toBe(10);
    expect(reg.user.email).toBe(email);
    expect(JSON.parse(store.get("baas.session")!)).toMatchObject({ access_token: reg.access_token, refresh_token: reg.refresh_token });
    const login = await client.auth.login(email, "correct horse");
    expect("access_token" in login && login.access_token !== reg.access_token).toBe(true);
    expect((await client.auth.me()).id).toBe(reg.user.id);

    // create
    const author = await client.collection<Author>("authors").create({ name: "Ann" });
    expect(author._owner_id).toBe(reg.user.id);
    const col = client.collection<Post>("posts");
    const posts: Post[] = [];
    for (const [title, views] of [["a", 5], ["b", 1], ["c", 9], ["d", 3], ["e", 7]] as const)
      posts.push(await col.create({ title, views, author: author._id }));
    expect(posts.map((p) => [p.title, p.views, p.author, p._owner_id])).toEqual(
      ["a", "b", "c", "d", "e"].map((t, i) => [t, [5, 1, 9, 3, 7][i], author._id, reg.user.id]),
    );

    // list with filter, sort and cursor
    const first = await col.list({ filter: { views: { gte: 3 } }, sort: "-views", limit: 2 });
    expect(first.items.map((p) => p.title)).toEqual(["c", "e"]);
    expect(first.total).toBe(4);
    expect(first.next_cursor).toBe(first.items[1]._id);
    const second = await col.list({ filter: { views: { gte: 3 } }, sort: "-views", limit: 2, after: first.next_cursor });
    expect(second.items.map((p) => p.title)).toEqual(["a", "d"]);
    expect(second.total).toBeNull();
    expect(second.next_cursor).toBeNull();
    const titles: (string | null)[] = [];
    for await (const p of col.iterate({ filter: ["views:lt:8"], sort: ["title:desc"], limit: 2 })) titles.push(p.title);
    expect(titles).toEqual(["e", "d", "b", "a"]);

    // expand
    expect((await col.get(posts[0]._id, { expand: ["author"] }))._expand?.author).toEqual(author);
    const page = await col.list({ filter: { title: "b" }, expand: ["author"], fields: ["title", "author"] });
    expect(page.items as unknown[]).toEqual([{ _id: posts[1]._id, title: "b", author: author._id, _expand: { author } }]);

    // 401: the access token expires; the next call refreshes once by itself and succeeds
    const expired = await waitForExpiry(client);
    const logBefore = serverRefreshStatuses().length;
    expect(refreshes()).toBe(0);
    expect((await col.get(posts[2]._id)).title).toBe("c");
    expect(refreshes()).toBe(1);
    const renewed = (await client.auth.session())!;
    expect(renewed.access_token).not.toBe(expired);
    expect(await meStatus(renewed.access_token)).toBe(200);

    // 20 parallel calls with an expired token: exactly one refresh, all succeed
    await waitForExpiry(client);
    const calls = Array.from({ length: 20 }, (_, i) =>
      i % 4 === 0 ? col.count() : i % 4 === 1 ? col.get(posts[0]._id) : i % 4 === 2 ? client.auth.me() : col.list({ limit: 1 }),
    );
    const results = await Promise.allSettled(calls);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(results.map((r) => (r as PromiseFulfilledResult<unknown>).value)).toEqual(
      calls.map((_, i) =>
        i % 4 === 0 ? 5 : i % 4 === 1 ? posts[0] : i % 4 === 2 ? expect.objectContaining({ id: reg.user.id }) : expect.objectContaining({ total: 5 }),
      ),
    );
    expect(refreshes()).toBe(2);
    const after = (await client.auth.session())!;
    expect(after.refresh_token).not.toBe(renewed.refresh_token);
    // The server saw these two refreshes and refused none (a reused refresh token is 401 and revokes the session).
    await waitFor(() => serverRefreshStatuses().length >= logBefore + 2, { what: "the request log lines of the refreshes" });
    expect(serverRefreshStatuses().slice(logBefore)).toEqual(["200", "200"]);
    expect(await meStatus(after.access_token)).toBe(200);

    // logout
    expect(await client.auth.logout()).toEqual({ ok: true });
    expect(await client.auth.session()).toBeNull();
    expect(store.has("baas.session")).toBe(false);
    expect(await meStatus(after.access_token)).toBe(401);
    const res = await fetch(`${srv.url}/api/v1/auth/refresh`, { method: "POST", body: JSON.stringify({ refresh_token: after.refresh_token }) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: expect.any(String), code: "invalid_token" });
    const err = await col.list().catch((e) => e);
    expect(err).toBeInstanceOf(BaasError);
    expect({ status: err.status, code: err.code }).toEqual({ status: 401, code: "unauthorized" });
    expect(refreshes()).toBe(2);
  });

  test("errors are BaasErrors with the server's status, code, message and field errors", async () => {
    const { client } = newClient();
    const email = newEmail();
    await client.auth.register(email, "correct horse");
    const wrong = await client.auth.login(email, "wrong password").catch((e) => e);
    expect(wrong).toBeInstanceOf(BaasError);
    expect({ status: wrong.status, code: wrong.code, message: wrong.message }).toEqual({
      status: 401,
      code: "invalid_credentials",
      message: "invalid email or password",
    });
    const col = client.collection<Post>("posts");
    const invalid = await col.create({ views: "many" as unknown as number }).catch((e) => e);
    expect({ status: invalid.status, code: invalid.code, errors: invalid.errors }).toEqual({
      status: 422,
      code: "validation_failed",
      errors: [{ field: "views", rule: "type", message: '"views" must be a number.' }],
    });
    const badSort = await col.list({ sort: "-nope" as "-views" }).catch((e) => e);
    expect({ status: badSort.status, code: badSort.code }).toEqual({ status: 400, code: "bad_request" });
    const missing = await client.collection("nope").list().catch((e) => e);
    expect({ status: missing.status, code: missing.code }).toEqual({ status: 404, code: "not_found" });
    const offline = await createClient("http://127.0.0.1:1").auth.login(email, "x").catch((e) => e);
    expect({ name: offline.name, status: offline.status, code: offline.code }).toEqual({ name: "BaasError", status: 0, code: "network_error" });
  });

  test("without a session a call needing a user is a 401 and nothing is refreshed", async () => {
    const { client, refreshes } = newClient();
    const err = await client.collection("posts").list().catch((e) => e);
    expect(err).toBeInstanceOf(BaasError);
    expect({ status: err.status, code: err.code }).toEqual({ status: 401, code: "unauthorized" });
    expect(refreshes()).toBe(0);
    expect(await client.auth.session()).toBeNull();
  });

  test("update, delete and restore send If-Match when asked: a stale version fails with 412 precondition_failed", async () => {
    const { client } = newClient();
    await client.auth.register(newEmail(), "correct horse");
    const col = client.collection<Post>("posts");
    const first = await col.create({ title: "v1", views: 1 });
    const second = await col.update(first._id, { views: 2 }, { ifMatch: first });
    expect(second.views).toBe(2);
    const stale = await col.update(first._id, { views: 9 }, { ifMatch: first }).catch((e) => e);
    expect(stale).toBeInstanceOf(BaasError);
    expect({ status: stale.status, code: stale.code }).toEqual({ status: 412, code: "precondition_failed" });
    const staleDelete = await col.delete(first._id, { ifMatch: first._updated_at }).catch((e) => e);
    expect(staleDelete.status).toBe(412);
    const deleted = await col.delete(first._id, { ifMatch: second });
    expect(deleted._deleted_at).toBeNumber();
    expect((await col.restore(first._id, { ifMatch: "*" }))._deleted_at).toBeNull();
  });

  test("update, delete, restore, count, aggregate, bulk and batch", async () => {
    const { client } = newClient();
    await client.auth.register(newEmail(), "correct horse");
    const col = client.collection<Post>("posts");
    const made = await col.bulk([{ title: "f", views: 2 }, { title: "g", views: 4 }, { title: "h" }]);
    expect(made.map((p) => p.title)).toEqual(["f", "g", "h"]);
    expect((await col.update(made[0]._id, { views: 3 })).views).toBe(3);
    expect((await col.delete(made[2]._id))._deleted_at).toBeNumber();
    const gone = await col.get(made[2]._id).catch((e) => e);
    expect({ status: gone.status, code: gone.code }).toEqual({ status: 404, code: "not_found" });
    expect((await col.get(made[2]._id, { include_deleted: true }))._deleted_at).toBeNumber();
    expect(await col.count()).toBe(2);
    expect(await col.count({ include_deleted: true })).toBe(3);
    expect((await col.restore(made[2]._id))._deleted_at).toBeNull();
    expect(await col.count({ filter: { views: null } })).toBe(1);
    expect(await col.count({ filter: { title: ["f", "h", "z"] } })).toBe(2);
    expect(await col.aggregate({ fn: "sum", field: "views" })).toEqual({ value: 7 });
    expect(await col.aggregate({ fn: "count", group_by: "views" })).toEqual({
      groups: [
        { group: null, value: 1 },
        { group: 3, value: 1 },
        { group: 4, value: 1 },
      ],
    });
    const res = await col.batch([
      { op: "create", data: { title: "i" } },
      { op: "update", id: made[1]._id, data: { views: 11 } },
      { op: "delete", id: made[2]._id },
    ]);
    expect(res.results.map((r) => r.op)).toEqual(["create", "update", "delete"]);
    const failed = await col.batch([{ op: "delete", id: made[2]._id }]).catch((e) => e);
    expect({ status: failed.status, code: failed.code }).toEqual({ status: 400, code: "batch_failed" });
    expect(failed.body).toMatchObject({ index: 0, op: "delete" });
  });

  test("a magic link signs in: request it, then verify the token from the mail", async () => {
    const { client } = newClient();
    const email = newEmail();
    await client.auth.register(email, "correct horse");
    await client.auth.logout();
    expect(await client.auth.requestMagicLink(email)).toEqual({ ok: true });
    // Without SMTP_URL the server writes the mail, link included, to its log.
    const token = await waitFor(() => {
      const line = srv.stderr().split("\n").find((l) => l.includes(email) && l.includes("/auth/magic-link?token="));
      return line && /magic-link\?token=([A-Za-z0-9_-]+)/.exec(line)?.[1];
    }, { what: "the magic-link mail in the server log" });
    const s = await client.auth.verifyMagicLink(token);
    expect("access_token" in s && s.user.email).toBe(email);
    expect((await client.auth.me()).is_verified).toBe(true);
    const used = await client.auth.verifyMagicLink(token).catch((e) => e);
    expect({ status: used.status, code: used.code }).toEqual({ status: 401, code: "invalid_token" });
  });

  test("a 2FA login answers totp_required and verifyTotp finishes it", async () => {
    const { client } = newClient();
    const email = newEmail();
    await client.auth.register(email, "correct horse");
    const setup = await client.request<{ otpauth_url: string }>("POST", "/auth/2fa/setup");
    const totp = URI.parse(setup.otpauth_url) as TOTP;
    await client.request("POST", "/auth/2fa/enable", { body: { code: totp.generate() } });
    await client.auth.logout();
    const step = await client.auth.login(email, "correct horse");
    expect(Object.keys(step).sort()).toEqual(["totp_required", "totp_token"]);
    expect(await client.auth.session()).toBeNull();
    if (!("totp_token" in step)) throw new Error("expected the 2FA step");
    // The code of the next 30-second step: the one used to enable may not be used again.
    const s = await client.auth.verifyTotp(step.totp_token, totp.generate({ timestamp: Date.now() + 30_000 }));
    expect(s.user.email).toBe(email);
    expect((await client.auth.me()).email).toBe(email);
  });

  test.skipIf(!Bun.which("node"))("the bundled client runs under Node (fetch only, no Bun APIs)", async () => {
    const out = mkdtempSync(join(tmpdir(), "baas-client-"));
    try {
      const build = Bun.spawnSync([process.execPath, "build", join(ROOT, "client/src/index.ts"), "--outdir", out, "--target", "browser"]);
      expect(build.exitCode).toBe(0);
      const script = `import { createClient, BaasError } from ${JSON.stringify(join(out, "index.js"))};
const baas = createClient(${JSON.stringify(srv.url)});
const s = await baas.auth.register(${JSON.stringify(newEmail())}, "correct horse");
const made = await baas.collection("posts").create({ title: "from node" });
const err = await baas.collection("nope").get("x").catch((e) => e);
console.log(JSON.stringify({ owner: made._owner_id === s.user.id, title: made.title, error: err instanceof BaasError && [err.status, err.code] }));`;
      writeFileSync(join(out, "run.mjs"), script);
      const node = Bun.spawn(["node", join(out, "run.mjs")], { stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(node.stdout).text(), new Response(node.stderr).text(), node.exited]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual({ owner: true, title: "from node", error: [404, "not_found"] });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  test("a client on the same storage picks up the session", async () => {
    const { client, storage } = newClient();
    const s = await client.auth.register(newEmail(), "correct horse");
    const again = createClient(srv.url, { storage });
    expect((await again.auth.me()).id).toBe(s.user.id);
    await again.auth.logout();
    expect(await meStatus(s.access_token)).toBe(401);
  });
});
