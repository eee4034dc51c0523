import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { issueMailToken } from "../../src/auth/mail-tokens.ts";
import { createTestApp, registerUser } from "../helpers/app.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

const t = createTestApp();
afterAll(() => t.close());

const U = "/api/v1/admin/users";

describe("admin user management", () => {
  test("create answers 201 with the user; roles, metadata and is_verified are taken; the password works for login", async () => {
    const res = await t.admin("POST", U, { email: " Ann@Example.test ", password: "password123", roles: ["editor"], metadata: { team: "a" }, is_verified: true });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), email: "ann@example.test", is_verified: true, roles: ["editor"], metadata: { team: "a" }, created_at: t.clock.now() });
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "ann@example.test", password: "password123" } });
    expect(login.status).toBe(200);
    expect(login.body.user.roles).toEqual(["editor"]);
  });

  test("create without a password makes a user who cannot log in with one; bad input is 422/400, a taken email 409", async () => {
    const res = await t.admin("POST", U, { email: "nopass@example.test" });
    expect(res.status).toBe(201);
    expect(res.body.is_verified).toBe(false);
    expect((await t.req("POST", "/api/v1/auth/login", { body: { email: "nopass@example.test", password: "anything-1" } })).status).toBe(401);
    expect((await t.admin("POST", U, { email: "bad" })).status).toBe(422);
    expect((await t.admin("POST", U, { email: "x@example.test", password: "short" })).status).toBe(422);
    expect((await t.admin("POST", U, { email: "x@example.test", roles: "admin" })).status).toBe(400);
    expect((await t.admin("POST", U, { email: "x@example.test", metadata: [1] })).status).toBe(400);
    expect((await t.admin("POST", U, { email: "x@example.test", is_verified: "yes" })).status).toBe(400);
    expect((await t.admin("POST", U, { email: "x@example.test", nickname: "x" })).status).toBe(400);
    const dup = await t.admin("POST", U, { email: "NOPASS@example.test" });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("conflict");
  });

  test("list answers { items, total } newest first, with search on email, limit and page", async () => {
    for (const n of ["list-a", "list-b", "list-c"]) await t.admin("POST", U, { email: `${n}@search.test` });
    const all = await t.admin("GET", `${U}?search=search.test`);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((u: { email: string }) => u.email)).toEqual(["list-c@search.test", "list-b@search.test", "list-a@search.test"]);
    const page2 = await t.admin("GET", `${U}?search=SEARCH.test&limit=2&page=2`);
    expect(page2.body).toEqual({ items: [expect.objectContaining({ email: "list-a@search.test" })], total: 3 });
    expect((await t.admin("GET", `${U}?search=%25`)).body.total).toBe(0);
    expect((await t.admin("GET", `${U}?limit=0`)).status).toBe(400);
    expect((await t.admin("GET", `${U}?limit=501`)).status).toBe(400);
    expect((await t.admin("GET", `${U}?page=x`)).status).toBe(400);
    const everyone = await t.admin("GET", U);
    expect(everyone.body.total).toBe(everyone.body.items.length);
  });

  test("get by id answers the user, an unknown id 404", async () => {
    const u = await registerUser(t, "get1@example.test");
    expect((await t.admin("GET", `${U}/${u.id}`)).body).toMatchObject({ id: u.id, email: "get1@example.test" });
    const none = await t.admin("GET", `${U}/01NOPE`);
    expect(none.status).toBe(404);
    expect(none.body.code).toBe("not_found");
  });

  test("PATCH sets roles, metadata, is_verified, email and password, answering the user; new roles reach the token at the next refresh", async () => {
    const u = await registerUser(t, "patch1@example.test", "old-password-1");
    const res = await t.admin("PATCH", `${U}/${u.id}`, { roles: ["admin", "editor"], metadata: { plan: "pro" }, is_verified: true, email: "patched@example.test", password: "new-password-2" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: u.id, email: "patched@example.test", is_verified: true, roles: ["admin", "editor"], metadata: { plan: "pro" }, created_at: u.body.user.created_at });
    expect((await t.req("POST", "/api/v1/auth/login", { body: { email: "patched@example.test", password: "new-password-2" } })).status).toBe(200);
    const refreshed = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: u.refresh } });
    expect(refreshed.body.user.roles).toEqual(["admin", "editor"]);
    const claims = JSON.parse(Buffer.from(refreshed.body.access_token.split(".")[1], "base64url").toString());
    expect(claims.roles).toEqual(["admin", "editor"]);
  });

  test("PATCH with bad values is 4xx and changes nothing; a taken email is 409; an unknown user 404", async () => {
    const u = await registerUser(t, "patch2@example.test");
    await registerUser(t, "patch2-other@example.test");
    expect((await t.admin("PATCH", `${U}/${u.id}`, { roles: [1] })).status).toBe(400);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { metadata: { a: { b: { c: { d: 1 } } } } })).status).toBe(400);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { is_verified: 1 })).status).toBe(400);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { id: "x" })).status).toBe(400);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { email: "patch2-other@example.test" })).status).toBe(409);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { password: "short" })).status).toBe(422);
    expect((await t.admin("PATCH", `${U}/nobody`, { roles: [] })).status).toBe(404);
    expect((await t.admin("GET", `${U}/${u.id}`)).body).toMatchObject({ email: "patch2@example.test", roles: [], metadata: {}, is_verified: false });
  });

  test("sessions lists the active sessions; revoking one makes its next request 401 at once", async () => {
    const u = await registerUser(t, "sess1@example.test");
    const second = await t.req("POST", "/api/v1/auth/login", { body: { email: "sess1@example.test", password: "password123" }, headers: { "user-agent": "test-agent/1" } });
    const list = await t.admin("GET", `${U}/${u.id}/sessions`);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(2);
    for (const s of list.body.items) expect(Object.keys(s).sort()).toEqual(["created_at", "expires_at", "id", "ip", "last_used_at", "user_agent"]);
    expect(list.body.items.some((s: { user_agent: string }) => s.user_agent === "test-agent/1")).toBe(true);
    const sid = JSON.parse(Buffer.from(second.body.access_token.split(".")[1], "base64url").toString()).sid;
    const del = await t.admin("DELETE", `/api/v1/admin/sessions/${sid}`);
    expect(del.status).toBe(200);
    expect(del.body.ok).toBe(true);
    const after = await t.req("GET", "/api/v1/auth/me", { token: second.body.access_token });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toBe("Bearer");
    expect((await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: second.body.refresh_token } })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(200);
    expect((await t.admin("GET", `${U}/${u.id}/sessions`)).body.items).toHaveLength(1);
    expect((await t.admin("DELETE", `/api/v1/admin/sessions/${sid}`)).status).toBe(404);
  });

  test("impersonate gives a 300 s access token without sid or refresh token, acting as the user", async () => {
    const u = await registerUser(t, "imp1@example.test");
    const res = await t.admin("POST", `${U}/${u.id}/impersonate`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ access_token: expect.any(String), expires_in: 300 });
    const claims = JSON.parse(Buffer.from(res.body.access_token.split(".")[1], "base64url").toString());
    expect(claims.sid).toBeUndefined();
    expect(claims.sub).toBe(u.id);
    expect(claims.exp - claims.iat).toBe(300);
    expect((await t.req("GET", "/api/v1/auth/me", { token: res.body.access_token })).body.id).toBe(u.id);
    t.clock.advance(301_000);
    expect((await t.req("GET", "/api/v1/auth/me", { token: res.body.access_token })).status).toBe(401);
  });

  test("delete removes the user and their sessions: their token is 401 and the user 404", async () => {
    const u = await registerUser(t, "del1@example.test");
    const res = await t.admin("DELETE", `${U}/${u.id}`);
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect((await t.admin("GET", `${U}/${u.id}`)).status).toBe(404);
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(401);
    expect((await t.admin("DELETE", `${U}/${u.id}`)).status).toBe(404);
  });

  test("every user-management call needs admin credentials: 401 without, 403 with a user's token", async () => {
    const u = await registerUser(t, "noadmin@example.test");
    const calls: [string, string][] = [["GET", U], ["POST", U], ["GET", `${U}/${u.id}`], ["PATCH", `${U}/${u.id}`], ["DELETE", `${U}/${u.id}`],
      ["GET", `${U}/${u.id}/sessions`], ["POST", `${U}/${u.id}/impersonate`], ["POST", `${U}/${u.id}/unlock`], ["DELETE", "/api/v1/admin/sessions/x"]];
    for (const [m, p] of calls) {
      expect((await t.req(m, p)).status).toBe(401);
      expect((await t.req(m, p, { token: u.token })).status).toBe(403);
    }
    expect((await t.admin("GET", `${U}/${u.id}`)).status).toBe(200);
  });
});

describe("admin email change", () => {
  test("changing a user's email voids the verify, magic-link and reset links mailed to the old address", async () => {
    const u = await registerUser(t, "before-change@example.test");
    const verify = await issueMailToken(t.ctx, u.id, "verify_email", 60_000);
    const magic = await issueMailToken(t.ctx, u.id, "magic_link", 60_000);
    const reset = await issueMailToken(t.ctx, u.id, "reset_password", 60_000);
    const res = await t.admin("PATCH", `${U}/${u.id}`, { email: "after-change@example.test" });
    expect(res.status).toBe(200);
    expect(res.body.email).toBe("after-change@example.test");
    const v = await t.req("POST", "/api/v1/auth/verify-email", { body: { token: verify } });
    expect(v.status).toBe(400);
    expect(v.body.code).toBe("invalid_token");
    const m = await t.req("POST", "/api/v1/auth/magic-link/verify", { body: { token: magic } });
    expect(m.status).toBe(401);
    expect(m.body.code).toBe("invalid_token");
    const r = await t.req("POST", "/api/v1/auth/reset-password", { body: { token: reset, password: "another-pass-1" } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("invalid_token");
    expect((await t.admin("GET", `${U}/${u.id}`)).body.is_verified).toBe(false);
  });

  test("a PATCH that keeps the same email leaves the mailed links working", async () => {
    const u = await registerUser(t, "same-email@example.test");
    const verify = await issueMailToken(t.ctx, u.id, "verify_email", 60_000);
    expect((await t.admin("PATCH", `${U}/${u.id}`, { email: "Same-Email@example.test", roles: ["x"] })).status).toBe(200);
    expect((await t.req("POST", "/api/v1/auth/verify-email", { body: { token: verify } })).status).toBe(200);
  });
});
