import { afterAll, describe, expect, test } from "bun:test";
import { hmacSha256 } from "../../src/crypto.ts";
import { jwtKey } from "../../src/auth/keys.ts";
import { createTestApp, registerUser } from "../helpers/app.ts";

const t = createTestApp();
afterAll(() => t.close());

const A = "/api/v1/auth";
const USER = { id: expect.any(String), email: expect.any(String), is_verified: false, roles: [], metadata: {}, created_at: expect.any(Number) };

/** The session response of CONTRACT §7 for a user with the given fields. */
const session = (user: Record<string, unknown>) => ({
  access_token: expect.any(String),
  refresh_token: expect.any(String),
  expires_in: 900,
  token_type: "Bearer",
  user: { ...USER, ...user },
});

function claimsOf(token: string): Record<string, unknown> {
  const [h, b] = token.split(".");
  expect(JSON.parse(Buffer.from(h, "base64url").toString())).toEqual({ alg: "HS256", typ: "JWT" });
  return JSON.parse(Buffer.from(b, "base64url").toString());
}

describe("POST /auth/register", () => {
  test("answers 201 with the session response, the email trimmed and lower-cased", async () => {
    const res = await t.req("POST", `${A}/register`, { body: { email: "  New.User@Example.COM ", password: "password123" } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(session({ email: "new.user@example.com", created_at: t.clock.now() }));
  });

  test("the access token is an HS256 JWT with sub, sid, roles, iat and exp, signed with the server key", async () => {
    const u = await registerUser(t, "claims@example.com");
    const c = claimsOf(u.token);
    const now = Math.floor(t.clock.now() / 1000);
    expect(c).toEqual({ sub: u.id, sid: expect.any(String), roles: [], iat: now, exp: now + 900 });
    const [h, b, sig] = u.token.split(".");
    expect(sig).toBe(hmacSha256(await jwtKey(t.ctx), `${h}.${b}`));
    const session = await t.db.get("SELECT user_id FROM _sessions WHERE id = ?", [c.sid as string]);
    expect(session).toEqual({ user_id: u.id });
  });

  test.each([
    ["no email", { password: "password123" }, "email", "required"],
    ["an email without @", { email: "nope", password: "password123" }, "email", "email"],
    ["an email without a domain", { email: "a@b", password: "password123" }, "email", "email"],
    ["an email that is a number", { email: 5, password: "password123" }, "email", "required"],
    ["no password", { email: "nopass@example.com" }, "password", "required"],
    ["a password of 7 characters", { email: "short@example.com", password: "1234567" }, "password", "min"],
    ["a password of 257 characters", { email: "long@example.com", password: "x".repeat(257) }, "password", "max"],
    ["a password that is a number", { email: "num@example.com", password: 12345678 }, "password", "required"],
  ])("%s is 422 naming the field and rule", async (_n, body, field, rule) => {
    const res = await t.req("POST", `${A}/register`, { body });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual({ field, rule, message: expect.any(String) });
    const email = (body as { email?: unknown }).email;
    if (typeof email === "string") expect(await t.db.get("SELECT 1 AS found FROM _users WHERE email = ?", [email])).toBeNull();
  });

  test("passwords of exactly 8 and 256 characters are accepted", async () => {
    expect((await t.req("POST", `${A}/register`, { body: { email: "p8@example.com", password: "12345678" } })).status).toBe(201);
    expect((await t.req("POST", `${A}/register`, { body: { email: "p256@example.com", password: "y".repeat(256) } })).status).toBe(201);
  });

  test("password length counts characters, an emoji once: 4 emoji are too short, 256 emoji are accepted, 257 too long", async () => {
    const short = await t.req("POST", `${A}/register`, { body: { email: "emoji4@example.com", password: "😀".repeat(4) } });
    expect(short.status).toBe(422);
    expect(short.body).toEqual({ errors: [{ field: "password", rule: "min", message: '"password" must be at least 8 characters.' }] });
    expect((await t.req("POST", `${A}/register`, { body: { email: "emoji256@example.com", password: "😀".repeat(256) } })).status).toBe(201);
    const long = await t.req("POST", `${A}/register`, { body: { email: "emoji257@example.com", password: "😀".repeat(257) } });
    expect(long.status).toBe(422);
    expect(long.body).toEqual({ errors: [{ field: "password", rule: "max", message: '"password" must be at most 256 characters.' }] });
  });

  test("a taken email is 409 conflict, whatever its case and spacing", async () => {
    await registerUser(t, "dup@example.com");
    const res = await t.req("POST", `${A}/register`, { body: { email: " DUP@example.com", password: "password123" } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String), code: "conflict" });
  });

  test("a body that is not an object is 400, malformed JSON 400 invalid_json", async () => {
    expect((await t.req("POST", `${A}/register`, { body: [1] })).status).toBe(400);
    const res = await t.req("POST", `${A}/register`, { body: "{" });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
  });
});

describe("POST /auth/login", () => {
  test("the right password gives a new session response", async () => {
    const u = await registerUser(t, "login@example.com");
    const res = await t.req("POST", `${A}/login`, { body: { email: " LOGIN@example.com", password: "password123" } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(session({ id: u.id, email: "login@example.com" }));
    expect(claimsOf(res.body.access_token).sid).not.toBe(claimsOf(u.token).sid);
  });

  test("an unknown email and a wrong password give the same 401 invalid_credentials", async () => {
    await registerUser(t, "same@example.com");
    const wrong = await t.req("POST", `${A}/login`, { body: { email: "same@example.com", password: "wrong-password" } });
    const unknown = await t.req("POST", `${A}/login`, { body: { email: "nobody@example.com", password: "wrong-password" } });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: "invalid email or password", code: "invalid_credentials" });
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  test("missing fields or a malformed email are the same 401", async () => {
    for (const body of [{}, { email: "same@example.com" }, { password: "password123" }, { email: "not-an-email", password: "x" }]) {
      const res = await t.req("POST", `${A}/login`, { body });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("invalid_credentials");
    }
  });
});

describe("POST /auth/refresh", () => {
  test("rotates: a new pair, the old refresh token then refused and the whole session revoked", async () => {
    const u = await registerUser(t, "refresh@example.com");
    t.clock.advance(1000);
    const r1 = await t.req("POST", `${A}/refresh`, { body: { refresh_token: u.refresh } });
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual(session({ id: u.id, email: "refresh@example.com" }));
    expect(r1.body.refresh_token).not.toBe(u.refresh);
    expect(claimsOf(r1.body.access_token).sid).toBe(claimsOf(u.token).sid);
    expect((await t.req("GET", `${A}/me`, { token: r1.body.access_token })).status).toBe(200);

    // Reuse of the already-used token: theft, so the session dies.
    const reuse = await t.req("POST", `${A}/refresh`, { body: { refresh_token: u.refresh } });
    expect(reuse.status).toBe(401);
    expect(reuse.body.code).toBe("invalid_token");
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: r1.body.refresh_token } })).status).toBe(401);
    expect((await t.req("GET", `${A}/me`, { token: r1.body.access_token })).status).toBe(401);
  });

  test("a session keeps its 20 most recently used refresh tokens: an older one is unknown, a kept one is theft", async () => {
    const u = await registerUser(t, "long-chain@example.com");
    const used: string[] = [];
    let refresh = u.refresh;
    let access = u.token;
    for (let i = 0; i < 25; i++) {
      t.clock.advance(1000);
      const res = await t.req("POST", `${A}/refresh`, { body: { refresh_token: refresh } });
      expect(res.status).toBe(200);
      used.push(refresh);
      refresh = res.body.refresh_token;
      access = res.body.access_token;
    }
    // The first used token is forgotten: refused, and the session goes on.
    const old = await t.req("POST", `${A}/refresh`, { body: { refresh_token: used[0] } });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe("invalid_token");
    expect((await t.req("GET", `${A}/me`, { token: access })).status).toBe(200);
    // One of the last 20 presented again: the session is revoked.
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: used[used.length - 20] } })).status).toBe(401);
    expect((await t.req("GET", `${A}/me`, { token: access })).status).toBe(401);
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: refresh } })).status).toBe(401);
  });

  test("a chain of rotations keeps working", async () => {
    const u = await registerUser(t, "chain@example.com");
    let refresh = u.refresh;
    for (let i = 0; i < 3; i++) {
      const res = await t.req("POST", `${A}/refresh`, { body: { refresh_token: refresh } });
      expect(res.status).toBe(200);
      refresh = res.body.refresh_token;
    }
  });

  test.each([["an unknown token", { refresh_token: "nope.nope" }], ["no token", {}], ["a number", { refresh_token: 5 }]])(
    "%s is 401 invalid_token",
    async (_n, body) => {
      const res = await t.req("POST", `${A}/refresh`, { body });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: "invalid_token" });
    },
  );

  test("an expired refresh token (after 30 days) is 401", async () => {
    const u = await registerUser(t, "stale@example.com");
    t.clock.advance(30 * 86_400_000 + 1000);
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: u.refresh } })).status).toBe(401);
  });
});

describe("access tokens", () => {
  test("an expired access token is 401 with WWW-Authenticate: Bearer", async () => {
    const u = await registerUser(t, "expiry@example.com");
    t.clock.advance(899_000);
    expect((await t.req("GET", `${A}/me`, { token: u.token })).status).toBe(200);
    t.clock.advance(2000);
    const res = await t.req("GET", `${A}/me`, { token: u.token });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("a revoked session's token is refused at once, on /auth and on the data API", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "revoked_check" });
    const u = await registerUser(t, "revoke@example.com");
    expect((await t.req("GET", "/api/v1/revoked_check", { token: u.token })).status).toBe(200);
    await t.db.run("UPDATE _sessions SET revoked_at = ? WHERE id = ?", [t.clock.now(), claimsOf(u.token).sid as string]);
    expect((await t.req("GET", `${A}/me`, { token: u.token })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/revoked_check", { token: u.token })).status).toBe(401);
  });

  test("a token with a tampered payload or signed with another key is 401", async () => {
    const u = await registerUser(t, "tamper@example.com");
    const [h, b, s] = u.token.split(".");
    const forged = Buffer.from(JSON.stringify({ ...claimsOf(u.token), roles: ["admin"] })).toString("base64url");
    expect((await t.req("GET", `${A}/me`, { token: `${h}.${forged}.${s}` })).status).toBe(401);
    const otherKey = `${h}.${b}.${hmacSha256("another key", `${h}.${b}`)}`;
    expect((await t.req("GET", `${A}/me`, { token: otherKey })).status).toBe(401);
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${b}.`;
    expect((await t.req("GET", `${A}/me`, { token: none })).status).toBe(401);
  });
});

describe("logout", () => {
  test("POST /auth/logout answers { ok: true }; that token and its refresh token then fail", async () => {
    const u = await registerUser(t, "logout@example.com");
    const res = await t.req("POST", `${A}/logout`, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await t.req("GET", `${A}/me`, { token: u.token })).status).toBe(401);
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: u.refresh } })).status).toBe(401);
  });

  test("logout leaves the user's other sessions alone", async () => {
    const u = await registerUser(t, "two@example.com");
    const second = await t.req("POST", `${A}/login`, { body: { email: "two@example.com", password: "password123" } });
    await t.req("POST", `${A}/logout`, { token: u.token });
    expect((await t.req("GET", `${A}/me`, { token: second.body.access_token })).status).toBe(200);
  });

  test("POST /auth/logout-all revokes every session and answers the counts", async () => {
    const u = await registerUser(t, "all@example.com");
    const s2 = await t.req("POST", `${A}/login`, { body: { email: "all@example.com", password: "password123" } });
    const res = await t.req("POST", `${A}/logout-all`, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sessions_revoked: 2, api_keys_revoked: 0 });
    expect((await t.req("GET", `${A}/me`, { token: s2.body.access_token })).status).toBe(401);
    expect((await t.req("POST", `${A}/refresh`, { body: { refresh_token: s2.body.refresh_token } })).status).toBe(401);
  });

  test("logout, logout-all and me without a token are 401 with WWW-Authenticate", async () => {
    for (const [m, p] of [["POST", "logout"], ["POST", "logout-all"], ["GET", "me"], ["PATCH", "me"]]) {
      const res = await t.req(m, `${A}/${p}`, { body: m === "PATCH" ? { metadata: {} } : undefined });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("unauthorized");
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  test("admin credentials on /auth/me are 401: the endpoint needs a user", async () => {
    const res = await t.admin("GET", `${A}/me`);
    expect(res.status).toBe(401);
  });
});

describe("GET and PATCH /auth/me", () => {
  let bad: Awaited<ReturnType<typeof registerUser>> | undefined;
  test("GET /auth/me answers the user", async () => {
    const u = await registerUser(t, "me@example.com");
    const res = await t.req("GET", `${A}/me`, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(u.body.user);
  });

  test("PATCH /auth/me replaces metadata and answers the user", async () => {
    const u = await registerUser(t, "meta@example.com");
    const first = await t.req("PATCH", `${A}/me`, { token: u.token, body: { metadata: { theme: "dark", n: 1 } } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ...u.body.user, metadata: { theme: "dark", n: 1 } });
    const second = await t.req("PATCH", `${A}/me`, { token: u.token, body: { metadata: { a: { b: { c: 1 } } } } });
    expect(second.status).toBe(200);
    expect(second.body.metadata).toEqual({ a: { b: { c: 1 } } });
    expect((await t.req("GET", `${A}/me`, { token: u.token })).body.metadata).toEqual({ a: { b: { c: 1 } } });
  });

  test("metadata of exactly 65,536 serialized bytes is accepted", async () => {
    const u = await registerUser(t, "meta-max@example.com");
    const filler = "x".repeat(65_536 - JSON.stringify({ k: "" }).length);
    const res = await t.req("PATCH", `${A}/me`, { token: u.token, body: { metadata: { k: filler } } });
    expect(res.status).toBe(200);
  });

  test.each([
    ["another key", { roles: ["admin"] }],
    ["another key beside metadata", { metadata: {}, email: "x@example.com" }],
    ["metadata that is an array", { metadata: [1] }],
    ["metadata that is a string", { metadata: "x" }],
    ["metadata that is null", { metadata: null }],
    ["no metadata", {}],
    ["metadata over 65,536 bytes", { metadata: { k: "x".repeat(65_536) } }],
    ["metadata 4 levels deep", { metadata: { a: { b: { c: { d: 1 } } } } }],
    ["arrays counted as levels", { metadata: { a: [[[1]]] } }],
  ])("%s is 400 bad_request and changes nothing", async (_n, body) => {
    bad ??= await registerUser(t, "bad-meta@example.com");
    const u = bad;
    const res = await t.req("PATCH", `${A}/me`, { token: u.token, body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    const me = await t.req("GET", `${A}/me`, { token: u.token });
    expect(me.body.metadata).toEqual({});
    expect(me.body.roles).toEqual([]);
  });
});
