import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TOTP, URI } from "otpauth";
import { EXPORT_PAGE, FRESH_SESSION_MS } from "../../src/ops/own-data.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { loadHooks } from "../../src/hooks/load.ts";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// A user's own data (CONTRACT §16): the export, and the deletion of the account through the write path.
// Each scenario signs up users (a slow password hash each) and makes dozens of requests: on PostgreSQL on a busy
// machine that passes 5 s.
setDefaultTimeout(30_000);
const dir = mkdtempSync(join(tmpdir(), "baas-own-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  join(dir, "log.ts"),
  `export default { collection: "*", afterDelete(e) { (globalThis.__ownDeletes ??= []).push(e.collection + ":" + e.record._id); } };\n`,
);

let t: TestApp;
const events: ChangeEvent[] = [];
const deletes = () => ((globalThis as { __ownDeletes?: string[] }).__ownDeletes ??= []);
beforeAll(async () => {
  t = createTestApp({ context: { hooks: await loadHooks(dir) }, env: { LOCKOUT_MAX_ATTEMPTS: "3" } });
  const userRules = { read: "owner", create: "authenticated", update: "owner", delete: "owner" };
  for (const name of ["comments", "likes", "bookmarks", "tags", "empty", "apins", "zpins"]) await createCollection(t, name, userRules);
  // Posts are read by every user (others' comments, likes and bookmarks point at them).
  await createCollection(t, "posts", { ...userRules, read: "authenticated" });
  const rel = (from_col: string, from_field: string, to_col: string, on_delete: string) =>
    t.admin("POST", "/api/v1/admin/relations", { from_col, from_field, to_col, type: "one", on_delete });
  // comments.post → posts: set_null; likes.post → posts: cascade; bookmarks.post → posts: restrict.
  // apins and zpins → posts: restrict, named to come before and after posts in any order of collections.
  for (const r of [
    await rel("comments", "post", "posts", "set_null"),
    await rel("likes", "post", "posts", "cascade"),
    await rel("bookmarks", "post", "posts", "restrict"),
    await rel("apins", "post", "posts", "restrict"),
    await rel("zpins", "post", "posts", "restrict"),
  ])
    expect(r.status).toBe(201);
  t.ctx.events.subscribe((e) => events.push(e));
}, 60_000); // a throwaway PostgreSQL cluster may take a while to start on a busy machine
afterAll(() => t.close());

const create = async (token: string, col: string, body: Record<string, unknown>) => {
  const res = await t.req("POST", `/api/v1/${col}`, { token, body });
  expect(res.status).toBe(201);
  return res.body._id as string;
};
const exists = async (col: string, id: string) => (await t.admin("GET", `/api/v1/${col}/${id}?include_deleted=true`)).status === 200;
const del = (token: string, body?: unknown) => t.req("DELETE", "/api/v1/auth/me", { token, body });

describe("GET /auth/me/export", () => {
  test("the user and every active record they own, by collection, as an admin reads them; nobody else's", async () => {
    const a = await registerUser(t, "export-a@example.com");
    const b = await registerUser(t, "export-b@example.com");
    const p1 = await create(a.token, "posts", { title: "one" });
    const p2 = await create(a.token, "posts", { title: "two" });
    const gone = await create(a.token, "posts", { title: "soft-deleted" });
    expect((await t.req("DELETE", `/api/v1/posts/${gone}`, { token: a.token })).status).toBe(200);
    const c1 = await create(a.token, "comments", { text: "hi", post: p1 });
    await create(b.token, "posts", { title: "b's" });
    await create(b.token, "comments", { text: "b on a", post: p1 });

    const res = await t.req("GET", "/api/v1/auth/me/export", { token: a.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const me = (await t.req("GET", "/api/v1/auth/me", { token: a.token })).body;
    const adminRead = async (col: string, id: string) => (await t.admin("GET", `/api/v1/${col}/${id}`)).body;
    expect(res.body).toEqual({
      user: me,
      collections: {
        posts: [await adminRead("posts", p1), await adminRead("posts", p2)],
        comments: [await adminRead("comments", c1)],
      },
    });
  });

  test("a many field lists only the records naming this one that the user may read", async () => {
    await createCollection(t, "threads", { read: "authenticated", create: "authenticated", update: "owner", delete: "owner" });
    await createCollection(t, "replies", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
    for (const r of [
      { from_col: "replies", from_field: "thread", to_col: "threads", type: "one" },
      { from_col: "threads", from_field: "replies", to_col: "replies", type: "many", to_field: "thread" },
    ])
      expect((await t.admin("POST", "/api/v1/admin/relations", r)).status).toBe(201);
    const a = await registerUser(t, "export-thread-a@example.com");
    const b = await registerUser(t, "export-thread-b@example.com");
    const thread = await create(a.token, "threads", { title: "mine" });
    const own = await create(a.token, "replies", { text: "a's", thread });
    const hidden = await create(b.token, "replies", { text: "b's", thread });
    expect((await t.admin("GET", `/api/v1/threads/${thread}`)).body.replies.sort()).toEqual([own, hidden].sort());
    expect((await t.req("GET", `/api/v1/threads/${thread}`, { token: a.token })).body.replies).toEqual([own]);
    const res = await t.req("GET", "/api/v1/auth/me/export", { token: a.token });
    expect(res.status).toBe(200);
    expect(res.body.collections.threads.map((r: { replies: string[] }) => r.replies)).toEqual([[own]]);
    expect(JSON.stringify(res.body)).not.toContain(hidden);
  });

  test(`streamed ${EXPORT_PAGE} records at a time: a large export is whole, in _id order, without duplicates`, async () => {
    const u = await registerUser(t, "export-many@example.com");
    const n = EXPORT_PAGE * 2 + 3;
    for (let i = 0; i < n; i += 500) {
      const batch = Array.from({ length: Math.min(500, n - i) }, (_, k) => ({ k: i + k }));
      expect((await t.req("POST", "/api/v1/tags/bulk", { token: u.token, body: batch })).status).toBe(201);
    }
    // Exactly one page's worth in another collection: the page after the last full one is empty.
    const exact = Array.from({ length: EXPORT_PAGE }, (_, k) => ({ k }));
    expect((await t.req("POST", "/api/v1/likes/bulk", { token: u.token, body: exact })).status).toBe(201);
    const res = await t.req("GET", "/api/v1/auth/me/export", { token: u.token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.collections).sort()).toEqual(["likes", "tags"]);
    const tags = res.body.collections.tags as { _id: string; k: number }[];
    expect(tags.length).toBe(n);
    expect(new Set(tags.map((r) => r._id)).size).toBe(n);
    expect(tags.map((r) => r._id)).toEqual(tags.map((r) => r._id).sort());
    expect(tags.map((r) => r.k).sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(res.body.collections.likes.length).toBe(EXPORT_PAGE);
  }, 60_000);

  test("files as download paths: each name of a file field becomes its /api/v1/files path, which serves the file", async () => {
    const fields = [{ name: "cover", type: "file" }, { name: "photos", type: "file", max_count: 3 }];
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "albums", fields, rules: { read: "owner", create: "authenticated" } })).status).toBe(201);
    const u = await registerUser(t, "export-files@example.com");
    const form = new FormData();
    form.append("title", "holiday");
    form.append("cover", new Blob(["cover text"], { type: "text/plain" }), "cover.txt");
    for (const n of ["a.txt", "b.txt"]) form.append("photos", new Blob([`photo ${n}`], { type: "text/plain" }), n);
    await t.ready;
    const made = await t.app.handle(new Request("http://localhost/api/v1/albums", { method: "POST", body: form, headers: { authorization: `Bearer ${u.token}` } }));
    const album = (await made.json()) as { _id: string; cover: string; photos: string[] };
    expect(made.status).toBe(201);
    const res = await t.req("GET", "/api/v1/auth/me/export", { token: u.token });
    const exported = res.body.collections.albums[0];
    const path = (name: string) => `/api/v1/files/albums/${album._id}/${name}`;
    expect(exported).toMatchObject({ _id: album._id, title: "holiday", cover: path(album.cover), photos: album.photos.map(path) });
    const file = await t.req("GET", exported.photos[1], { token: u.token });
    expect(file.status).toBe(200);
    expect(file.text).toBe("photo b.txt");
  });

  test("impersonation tokens are refused (403), API keys are not credentials here (401)", async () => {
    const u = await registerUser(t, "export-imp@example.com");
    const imp = await t.admin("POST", `/api/v1/admin/users/${u.id}/impersonate`);
    const res = await t.req("GET", "/api/v1/auth/me/export", { token: imp.body.access_token });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("forbidden");
    expect((await del(imp.body.access_token, { password: "password123" })).status).toBe(403);
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "k" } });
    expect((await t.req("GET", "/api/v1/auth/me/export", { headers: { "x-api-key": key.body.key } })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/me/export")).status).toBe(401);
  });
});

describe("DELETE /auth/me", () => {
  test("deletes exactly the owned records through the write path; others' records follow their on_delete; sessions and keys go", async () => {
    const a = await registerUser(t, "delete-a@example.com");
    const b = await registerUser(t, "delete-b@example.com");
    const key = (await t.req("POST", "/api/v1/auth/api-keys", { token: a.token, body: { name: "k" } })).body.key as string;
    const posts = [await create(a.token, "posts", { title: "1" }), await create(a.token, "posts", { title: "2" }), await create(a.token, "posts", { title: "3" })];
    expect((await t.req("DELETE", `/api/v1/posts/${posts[2]}`, { token: a.token })).status).toBe(200); // soft-deleted: still theirs, still deleted
    // a's own bookmark restricts a's own post: it is deleted first, whatever the order found.
    const ownMark = await create(a.token, "bookmarks", { post: posts[0] });
    const pins = [await create(a.token, "apins", { post: posts[1] }), await create(a.token, "zpins", { post: posts[1] })];
    const bComment = await create(b.token, "comments", { text: "b", post: posts[0] });
    const bLike = await create(b.token, "likes", { post: posts[1] });
    const bPost = await create(b.token, "posts", { title: "b keeps this" });
    const aComment = await create(a.token, "comments", { text: "a on b", post: bPost });

    const seen = events.length;
    deletes().length = 0;
    const res = await del(a.token, { password: "password123" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, deleted: { posts: 3, comments: 1, bookmarks: 1, apins: 1, zpins: 1 } });

    for (const id of posts) expect(await exists("posts", id)).toBe(false);
    expect(await exists("bookmarks", ownMark)).toBe(false);
    for (const [i, col] of ["apins", "zpins"].entries()) expect(await exists(col, pins[i]!)).toBe(false);
    expect(await exists("comments", aComment)).toBe(false);
    // b's records: set_null, cascade (hard, as the delete was), untouched.
    expect((await t.admin("GET", `/api/v1/comments/${bComment}`)).body.post).toBeNull();
    expect(await exists("likes", bLike)).toBe(false);
    expect(await exists("posts", bPost)).toBe(true);
    // Hooks ran for every record deleted (a delete tried first and rolled back by a restrict may run some twice);
    // events went out once for each.
    expect([...new Set(deletes())].sort()).toEqual([...posts.map((id) => `posts:${id}`), `bookmarks:${ownMark}`, `apins:${pins[0]}`, `zpins:${pins[1]}`, `comments:${aComment}`, `likes:${bLike}`].sort());
    const fresh = events.slice(seen);
    expect(fresh.filter((e) => e.action === "hard_delete").map((e) => e.record._id).sort()).toEqual([...posts, ownMark, ...pins, aComment, bLike].sort());
    expect(fresh.filter((e) => e.action === "update").map((e) => e.record._id)).toEqual([bComment]);

    // The account and every credential are gone.
    expect((await t.req("GET", "/api/v1/auth/me", { token: a.token })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/posts", { headers: { "x-api-key": key } })).status).toBe(401);
    expect((await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: a.refresh } })).status).toBe(401);
    expect((await t.req("POST", "/api/v1/auth/login", { body: { email: "delete-a@example.com", password: "password123" } })).status).toBe(401);
    expect((await t.admin("GET", `/api/v1/admin/users/${a.id}`)).status).toBe(404);
    // The address is free again.
    expect((await t.req("POST", "/api/v1/auth/register", { body: { email: "delete-a@example.com", password: "password123" } })).status).toBe(201);
  });

  test("a record another user's restrict relation keeps: 409 and nothing is deleted", async () => {
    const a = await registerUser(t, "restrict-a@example.com");
    const b = await registerUser(t, "restrict-b@example.com");
    const free = await create(a.token, "comments", { text: "deleted first, then restored by the rollback" });
    const kept = await create(a.token, "posts", { title: "bookmarked by b" });
    await create(b.token, "bookmarks", { post: kept });
    const seen = events.length;
    const res = await del(a.token, { password: "password123" });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("conflict");
    expect(await exists("posts", kept)).toBe(true);
    expect(await exists("comments", free)).toBe(true);
    expect((await t.req("GET", "/api/v1/auth/me", { token: a.token })).status).toBe(200);
    expect(events.length).toBe(seen);
  });

  test("wrong password 401 invalid_credentials (nothing deleted); lockout after the limit; missing proof 400", async () => {
    const u = await registerUser(t, "delete-lock@example.com");
    const post = await create(u.token, "posts", { title: "mine" });
    expect((await del(u.token)).status).toBe(400);
    expect((await del(u.token, { password: 5 })).status).toBe(400);
    expect((await del(u.token, { password: "x", extra: 1 })).status).toBe(400);
    const wrong = await del(u.token, { password: "wrong-password" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe("invalid_credentials");
    expect(await exists("posts", post)).toBe(true);
    // A code from an account without 2FA is refused plainly.
    expect((await del(u.token, { code: "123456" })).status).toBe(400);
    await del(u.token, { password: "wrong-again" });
    await del(u.token, { password: "and-again" });
    const locked = await del(u.token, { password: "password123" });
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("account_locked");
    expect(locked.headers.get("retry-after")).toBeTruthy();
    expect(await exists("posts", post)).toBe(true);
  });

  test("with 2FA on, a fresh TOTP code deletes (a used or wrong one is 400 invalid_code)", async () => {
    const u = await registerUser(t, "delete-2fa@example.com");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { is_verified: true })).status).toBe(200);
    const setup = await t.req("POST", "/api/v1/auth/2fa/setup", { token: u.token });
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    const enabling = totp.generate({ timestamp: t.clock.now() });
    expect((await t.req("POST", "/api/v1/auth/2fa/enable", { token: u.token, body: { code: enabling } })).status).toBe(200);
    const post = await create(u.token, "posts", { title: "2fa" });
    const replay = await del(u.token, { code: enabling });
    expect(replay.status).toBe(400);
    expect(replay.body.code).toBe("invalid_code");
    expect(await exists("posts", post)).toBe(true);
    t.clock.advance(30_000);
    const ok = await del(u.token, { code: totp.generate({ timestamp: t.clock.now() }) });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, deleted: { posts: 1 } });
  });

  test("an account without password or 2FA (OAuth, magic link): a session at most 5 minutes old is the proof", async () => {
    const u = await registerUser(t, "delete-oauth@example.com");
    await t.db.run("UPDATE _users SET password_hash = NULL WHERE id = ?", [u.id]);
    // The stored password is gone: sending one proves nothing.
    expect((await del(u.token, { password: "password123" })).status).toBe(401);
    t.clock.advance(FRESH_SESSION_MS + 1000);
    const stale = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: u.refresh } });
    expect(stale.status).toBe(200);
    const old = await del(stale.body.access_token);
    expect(old.status).toBe(403);
    expect(old.body.code).toBe("reauthentication_required");
    // A new sign-in (here: a session made directly, as OAuth or a magic link would) may delete.
    const { createSession } = await import("../../src/auth/sessions.ts");
    const { findUserById } = await import("../../src/users/users.ts");
    const session = await createSession(t.ctx, (await findUserById(t.ctx, u.id))!, { ip: null, userAgent: null });
    const res = await del(session.access_token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, deleted: {} });
  });
});
