import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

const t = createTestApp();
afterAll(() => t.close());

const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });
const me = (token: string) => t.req("GET", "/api/v1/auth/me", { token });
const patchMe = (token: string, body: unknown) => t.req("PATCH", "/api/v1/auth/me", { token, body });

describe("register and login", () => {
  test("register answers 201 with the session response; the user starts unverified with no roles", async () => {
    const res = await post("/register", { email: " New@Example.test ", password: "password123" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_in: 900,
      token_type: "Bearer",
      user: { id: expect.any(String), email: "new@example.test", is_verified: false, roles: [], metadata: {}, created_at: t.clock.now() },
    });
    const claims = JSON.parse(Buffer.from(res.body.access_token.split(".")[1], "base64url").toString());
    expect(claims).toMatchObject({ sub: res.body.user.id, sid: expect.any(String), roles: [] });
    expect(claims.exp - claims.iat).toBe(900);
  });

  test("a duplicate email is 409 conflict, a bad email or password 422", async () => {
    await registerUser(t, "dup@example.test");
    const dup = await post("/register", { email: "DUP@example.test", password: "password123" });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("conflict");
    expect((await post("/register", { email: "nope", password: "password123" })).body.errors[0]).toMatchObject({ field: "email", rule: "email" });
    expect((await post("/register", { email: "a@example.test", password: "short" })).body.errors[0]).toMatchObject({ field: "password", rule: "min" });
    expect((await post("/register", { email: "a@example.test", password: "x".repeat(257) })).body.errors[0]).toMatchObject({ field: "password", rule: "max" });
  });

  test("the password is stored only as an argon2id hash", async () => {
    const u = await registerUser(t, "hash@example.test", "clear-text-password");
    const row = t.ctx.sqlite.query<{ password_hash: string }, [string]>("SELECT password_hash FROM _users WHERE id = ?").get(u.id)!;
    expect(row.password_hash.startsWith("$argon2id$")).toBe(true);
    expect(row.password_hash).not.toContain("clear-text-password");
  });
});

describe("sessions", () => {
  test("logout answers ok and revokes the session: the access and refresh tokens stop working at once", async () => {
    const u = await registerUser(t, "logout@example.test");
    const res = await post("/logout", undefined, u.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await me(u.token)).status).toBe(401);
    expect((await post("/refresh", { refresh_token: u.refresh })).status).toBe(401);
  });

  test("refresh rotates the pair; the old refresh token presented again revokes the whole session", async () => {
    const u = await registerUser(t, "refresh@example.test");
    const r1 = await post("/refresh", { refresh_token: u.refresh });
    expect(r1.status).toBe(200);
    expect(r1.body.refresh_token).not.toBe(u.refresh);
    expect((await me(r1.body.access_token)).status).toBe(200);
    const reuse = await post("/refresh", { refresh_token: u.refresh });
    expect(reuse.status).toBe(401);
    expect((await me(r1.body.access_token)).status).toBe(401);
    expect((await post("/refresh", { refresh_token: r1.body.refresh_token })).status).toBe(401);
  });

  test("an access token stops working when it expires; refresh gives a new one", async () => {
    const u = await registerUser(t, "expire@example.test");
    t.clock.advance(901_000);
    const res = await me(u.token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    const r = await post("/refresh", { refresh_token: u.refresh });
    expect((await me(r.body.access_token)).status).toBe(200);
  });

  test("a refresh token expires with its session after refresh_token_ttl_days", async () => {
    const u = await registerUser(t, "refresh-exp@example.test");
    t.clock.advance(30 * 86_400_000 + 1000);
    expect((await post("/refresh", { refresh_token: u.refresh })).status).toBe(401);
  });
});

describe("PATCH /auth/me", () => {
  test("replaces metadata and answers the user; 3 levels and 65,536 bytes are allowed", async () => {
    const u = await registerUser(t, "meta1@example.test");
    const res = await patchMe(u.token, { metadata: { a: { b: { c: 1 } } } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: u.id, metadata: { a: { b: { c: 1 } } } });
    const big = { s: "x".repeat(65_536 - '{"s":""}'.length) };
    expect((await patchMe(u.token, { metadata: big })).status).toBe(200);
    expect((await patchMe(u.token, { metadata: { only: true } })).body.metadata).toEqual({ only: true });
  });

  test("metadata that is not an object, over 64 KB or deeper than 3 levels is 400 with a message saying why", async () => {
    const u = await registerUser(t, "meta2@example.test");
    for (const [metadata, words] of [
      [[1, 2], "object"],
      ["text", "object"],
      [null, "object"],
      [{ s: "x".repeat(65_536) }, "too large"],
      [{ a: { b: { c: { d: 1 } } } }, "nested too deeply"],
    ] as [unknown, string][]) {
      const res = await patchMe(u.token, { metadata });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
      expect(res.body.error).toContain(words);
    }
    expect((await me(u.token)).body.metadata).toEqual({});
  });

  test("roles and other keys cannot be changed by the user", async () => {
    const u = await registerUser(t, "meta3@example.test");
    const res = await patchMe(u.token, { metadata: {}, roles: ["admin"] });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("roles");
    expect((await patchMe(u.token, { email: "x@example.test" })).status).toBe(400);
    expect((await me(u.token)).body.roles).toEqual([]);
  });
});
