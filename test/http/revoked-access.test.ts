import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp, type TestResponse } from "../helpers/app.ts";
import {
  expectUnauthorized,
  login,
  makeApiKey,
  makeBlog,
  makeCollection,
  makeRecord,
  makeUser,
  sessionIdOf,
  type TestUser,
} from "../helpers/fixtures.ts";

// Credentials that stop being valid (logout, logout-all, a revoked session, a deleted user, a
// password reset) are refused with 401 `unauthorized` on every path that reads or writes records,
// whatever the collection's rules; refresh tokens with 401 `invalid_token`.

type Cred = { token: string } | { key: string };

interface World {
  post: string;
  deleted: string;
  doomed: string;
}

/** Every path of the data API that reads or writes records, as the holder of `cred` calls it. */
const PATHS: { name: string; call: (t: TestApp, w: World, cred: Cred) => Promise<TestResponse> }[] = [
  { name: "get", call: (t, w, c) => send(t, c, "GET", `/posts/${w.post}`) },
  { name: "list", call: (t, _w, c) => send(t, c, "GET", "/posts") },
  { name: "count", call: (t, _w, c) => send(t, c, "GET", "/posts/count") },
  { name: "aggregate", call: (t, _w, c) => send(t, c, "GET", "/posts/aggregate?fn=count") },
  { name: "search", call: (t, _w, c) => send(t, c, "GET", "/posts?search=hello") },
  { name: "search count", call: (t, _w, c) => send(t, c, "GET", "/posts/count?search=hello") },
  { name: "expand one", call: (t, w, c) => send(t, c, "GET", `/posts/${w.post}?expand=author`) },
  { name: "expand many", call: (t, _w, c) => send(t, c, "GET", "/posts?expand=comments") },
  { name: "expand many_via", call: (t, w, c) => send(t, c, "GET", `/posts/${w.post}?expand=tags`) },
  { name: "create", call: (t, _w, c) => send(t, c, "POST", "/posts", { title: "hello again" }) },
  { name: "update", call: (t, w, c) => send(t, c, "PATCH", `/posts/${w.post}`, { title: "hello changed" }) },
  { name: "delete", call: (t, w, c) => send(t, c, "DELETE", `/posts/${w.doomed}`) },
  { name: "restore", call: (t, w, c) => send(t, c, "POST", `/posts/${w.deleted}/restore`) },
  { name: "bulk", call: (t, _w, c) => send(t, c, "POST", "/posts/bulk", [{ title: "hello bulk" }]) },
  {
    name: "batch",
    call: (t, w, c) =>
      send(t, c, "POST", "/posts/batch", {
        operations: [
          { op: "create", data: { title: "hello batch" } },
          { op: "update", id: w.post, data: { title: "hello batch" } },
        ],
      }),
  },
];

function send(t: TestApp, cred: Cred, method: string, path: string, body?: unknown): Promise<TestResponse> {
  if ("token" in cred) return t.req(method, `/api/v1${path}`, { token: cred.token, body });
  return t.req(method, `/api/v1${path}`, { headers: { "x-api-key": cred.key }, body });
}

/**
 * Collections with owner rules and a relation of each kind, and records of `owner`: a post
 * linked to an author, a comment and a tag; a soft-deleted post (restore); a post to delete.
 */
async function buildWorld(t: TestApp, owner: TestUser): Promise<World> {
  await makeBlog(t, {
    posts: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
    targets: { read: "owner", create: "authenticated" },
  });
  const author = await makeRecord(t, "authors", { name: "Ann" }, owner.token);
  const tag = await makeRecord(t, "tags", { label: "news" }, owner.token);
  const post = await makeRecord(t, "posts", { title: "hello world", author, tags: [tag] }, owner.token);
  await makeRecord(t, "comments", { post, text: "first" }, owner.token);
  const deleted = await makeRecord(t, "posts", { title: "hello deleted" }, owner.token);
  expect((await t.req("DELETE", `/api/v1/posts/${deleted}`, { token: owner.token })).status).toBe(200);
  const doomed = await makeRecord(t, "posts", { title: "hello doomed" }, owner.token);
  return { post, deleted, doomed };
}

/** Every path answers 2xx to a valid credential (so a later 401 is the revocation's doing). */
async function expectAllowed(t: TestApp, w: World, cred: Cred, label: string) {
  for (const p of PATHS) {
    const res = await p.call(t, w, cred);
    if (res.status >= 300) throw new Error(`${label} ${p.name}: expected success, got ${res.status} ${res.text}`);
  }
  // The admin brings the deleted post back, so the next pass can delete it again.
  expect((await t.admin("POST", `/api/v1/posts/${w.doomed}/restore`)).status).toBe(200);
}

async function expectRefused(t: TestApp, w: World, cred: Cred, label: string) {
  for (const p of PATHS) expectUnauthorized(await p.call(t, w, cred), `${label} ${p.name}`);
}

async function expectRefreshRefused(t: TestApp, refresh: string) {
  const res = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: refresh } });
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ error: expect.any(String), code: "invalid_token" });
}

let t: TestApp;
let ann: TestUser;
let world: World;

beforeEach(async () => {
  t = createTestApp();
  ann = await makeUser(t, "ann@example.com");
  world = await buildWorld(t, ann);
});
afterEach(() => t.close());

describe("revoked credentials are refused on every path that reads or writes records", () => {
  test("logout: that session's access and refresh tokens are refused; another session of the user keeps working", async () => {
    const other = await login(t, ann.email);
    await expectAllowed(t, world, { token: ann.token }, "before logout");
    expect((await t.req("POST", "/api/v1/auth/logout", { token: ann.token })).body).toEqual({ ok: true });
    await expectRefused(t, world, { token: ann.token }, "after logout");
    await expectRefreshRefused(t, ann.refresh);
    expect((await t.req("GET", `/api/v1/posts/${world.post}`, { token: other.token })).status).toBe(200);
  });

  test("logout-all: every session's access and refresh tokens and every API key are refused", async () => {
    const other = await login(t, ann.email);
    const keys = [await makeApiKey(t, ann.token, "one"), await makeApiKey(t, ann.token, "two")];
    for (const key of keys) await expectAllowed(t, world, { key }, "key before logout-all");
    const res = await t.req("POST", "/api/v1/auth/logout-all", { token: ann.token });
    expect(res.body).toEqual({ ok: true, sessions_revoked: 2, api_keys_revoked: 2 });
    for (const token of [ann.token, other.token]) await expectRefused(t, world, { token }, "token after logout-all");
    for (const key of keys) await expectRefused(t, world, { key }, "key after logout-all");
    for (const refresh of [ann.refresh, other.refresh]) await expectRefreshRefused(t, refresh);
  });

  test("a session the admin revokes: its access and refresh tokens are refused", async () => {
    await expectAllowed(t, world, { token: ann.token }, "before revocation");
    expect((await t.admin("DELETE", `/api/v1/admin/sessions/${sessionIdOf(ann.token)}`)).status).toBe(200);
    await expectRefused(t, world, { token: ann.token }, "after revocation");
    await expectRefreshRefused(t, ann.refresh);
  });

  test("a deleted user: access token, refresh token, API key and impersonation token are refused", async () => {
    const key = await makeApiKey(t, ann.token);
    const imp = await t.admin("POST", `/api/v1/admin/users/${ann.id}/impersonate`);
    expect(imp.status).toBe(200);
    await expectAllowed(t, world, { key }, "key before delete");
    await expectAllowed(t, world, { token: imp.body.access_token }, "impersonation before delete");
    expect((await t.admin("DELETE", `/api/v1/admin/users/${ann.id}`)).body).toEqual({ ok: true, id: ann.id });
    await expectRefused(t, world, { token: ann.token }, "token of a deleted user");
    await expectRefused(t, world, { key }, "key of a deleted user");
    await expectRefused(t, world, { token: imp.body.access_token }, "impersonation of a deleted user");
    await expectRefreshRefused(t, ann.refresh);
  });

  test("a password reset: every old API key, access token and refresh token is refused; a new key works", async () => {
    const keys = [await makeApiKey(t, ann.token, "one"), await makeApiKey(t, ann.token, "two"), await makeApiKey(t, ann.token, "three")];
    for (const key of keys) await expectAllowed(t, world, { key }, "key before reset");
    expect((await t.req("POST", "/api/v1/auth/forgot-password", { body: { email: ann.email } })).body).toEqual({ ok: true });
    const mail = t.log.lines.findLast((l) => l.fields?.to === ann.email && String(l.fields?.link).includes("/auth/reset-password?token="));
    const token = new URL(String(mail!.fields!.link)).searchParams.get("token");
    const reset = await t.req("POST", "/api/v1/auth/reset-password", { body: { token, password: "a-new-password-1" } });
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ ok: true, sessions_revoked: 1, api_keys_revoked: 3 });
    for (const key of keys) await expectRefused(t, world, { key }, "key after reset");
    await expectRefused(t, world, { token: ann.token }, "token after reset");
    await expectRefreshRefused(t, ann.refresh);
    const fresh = await t.req("POST", "/api/v1/auth/login", { body: { email: ann.email, password: "a-new-password-1" } });
    expect(fresh.status).toBe(200);
    await expectAllowed(t, world, { key: await makeApiKey(t, fresh.body.access_token, "new") }, "key made after reset");
  });

  test("a role taken away: API keys and access tokens lose it at once", async () => {
    await makeCollection(t, "drafts", { read: { role: "editor" } });
    const ed = await makeUser(t, "ed@example.com", ["editor"]);
    const key = await makeApiKey(t, ed.token);
    expect((await send(t, { key }, "GET", "/drafts")).status).toBe(200);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ed.id}`, { roles: [] })).status).toBe(200);
    const denied = await send(t, { key }, "GET", "/drafts");
    expect({ status: denied.status, body: denied.body }).toEqual({
      status: 403,
      body: { error: '"read" on collection "drafts" requires the role "editor"', code: "forbidden" },
    });
    // The access token's copy of the roles is for clients to read: rules read the user's roles at the request (CONTRACT §12).
    expect((await send(t, { token: ed.token }, "GET", "/drafts")).status).toBe(403);
    const refreshed = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: ed.refresh } });
    expect(refreshed.status).toBe(200);
    expect((await send(t, { token: refreshed.body.access_token }, "GET", "/drafts")).status).toBe(403);
  });
});
