import { afterAll, describe, expect, test } from "bun:test";
import { adminLogin } from "../../src/auth/admin.ts";
import { ADMIN_SECRET, createTestApp, registerUser } from "../helpers/app.ts";

const t = createTestApp();
afterAll(() => t.close());

const LIST = "/api/v1/admin/collections";

describe("admin credentials", () => {
  test("the admin secret as a Bearer token opens the admin API", async () => {
    const res = await t.req("GET", LIST, { token: ADMIN_SECRET });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [] });
  });

  test("the admin secret in X-Admin-Token opens the admin API", async () => {
    const res = await t.req("GET", LIST, { headers: { "x-admin-token": ADMIN_SECRET } });
    expect(res.status).toBe(200);
  });

  test("POST /admin/login exchanges the secret for a 12-hour admin token usable in X-Admin-Token and as Bearer", async () => {
    const res = await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token: expect.any(String), expires_in: 43200 });
    const viaHeader = await t.req("GET", LIST, { headers: { "x-admin-token": res.body.token } });
    expect(viaHeader.status).toBe(200);
    const viaBearer = await t.req("GET", LIST, { token: res.body.token });
    expect(viaBearer.status).toBe(200);
  });

  test("an admin token stops working after 12 hours", async () => {
    const { body } = await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    t.clock.advance(12 * 3600 * 1000 + 1000);
    const res = await t.req("GET", LIST, { headers: { "x-admin-token": body.token } });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
  });

  test("no credentials is 401 unauthorized with WWW-Authenticate: Bearer", async () => {
    const res = await t.req("GET", LIST);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String), code: "unauthorized" });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test.each([
    ["a wrong Bearer secret", { authorization: "Bearer not-the-secret" }],
    ["a wrong X-Admin-Token", { "x-admin-token": "not-the-secret" }],
    ["a forged admin token", { "x-admin-token": "eyJhbGciOiJIUzI1NiJ9.eyJ0eXAiOiJhZG1pbiJ9.AAAA" }],
    ["a malformed Authorization header", { authorization: "Basic abc" }],
  ])("%s is 401 unauthorized", async (_name, headers) => {
    const res = await t.req("GET", LIST, { headers });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("a user's access token on the admin API is 403 forbidden", async () => {
    const u = await registerUser(t, "plain-user@example.com");
    const res = await t.req("GET", LIST, { token: u.token });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), code: "forbidden" });
  });

  test("a wrong secret at /admin/login is 401 invalid_credentials", async () => {
    const res = await t.req("POST", "/api/v1/admin/login", { body: { secret: "wrong" } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String), code: "invalid_credentials" });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("/admin/login with no body or a non-string secret is 401, malformed JSON 400", async () => {
    expect((await t.req("POST", "/api/v1/admin/login", { body: {} })).status).toBe(401);
    expect((await t.req("POST", "/api/v1/admin/login", { body: { secret: 42 } })).status).toBe(401);
    const bad = await t.req("POST", "/api/v1/admin/login", { body: "{nope" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_json");
  });
});

describe("admin login rate limit", () => {
  const r = createTestApp();
  afterAll(() => r.close());

  test("the 11th login try within a minute is 429 rate_limited with Retry-After, and the limit lifts after a minute", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await r.req("POST", "/api/v1/admin/login", { body: { secret: "wrong" } });
      expect(res.status).toBe(401);
    }
    const limited = await r.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: expect.any(String), code: "rate_limited" });
    const retry = Number(limited.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    r.clock.advance(61_000);
    const ok = await r.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    expect(ok.status).toBe(200);
  });
});

describe("admin login limit counts wrong secrets only", () => {
  const r = createTestApp();
  afterAll(() => r.close());

  test("successful logins do not use up the 10 tries: after 15 good logins, 10 wrong ones are 401 and the 11th try is 429", async () => {
    for (let i = 0; i < 15; i++) {
      const res = await r.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
      expect(res.status).toBe(200);
    }
    for (let i = 0; i < 10; i++) {
      const res = await r.req("POST", "/api/v1/admin/login", { body: { secret: "wrong" } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: "invalid_credentials" });
    }
    const limited = await r.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: expect.any(String), code: "rate_limited" });
  });
});

describe("admin login bookkeeping", () => {
  const r = createTestApp();
  afterAll(() => r.close());

  test("tries from many addresses are forgotten once they are older than a minute, while recent ones still count", async () => {
    const addresses = async () => (await r.db.get<{ n: number }>("SELECT COUNT(DISTINCT ip) AS n FROM _admin_attempts"))!.n;
    const refused = (secret: string, ip: string, message = "invalid admin credentials") => expect(adminLogin(r.ctx, secret, ip)).rejects.toThrow(message);
    // Tries from 300 addresses: five made through the login, the rest written as the login writes them, in one
    // transaction (300 durable commits one after another take minutes on a disk shared with a busy machine).
    for (let i = 0; i < 5; i++) await refused("wrong", `10.0.0.${i}`);
    const at = r.clock.now();
    await r.db.transaction(async () => {
      for (let i = 5; i < 300; i++) await r.db.run("INSERT INTO _admin_attempts (ip, at) VALUES (?, ?)", [`10.0.${i >> 8}.${i & 255}`, at]);
    });
    r.clock.advance(30_000);
    for (let i = 0; i < 9; i++) await refused("wrong", "192.0.2.1");
    expect(await addresses()).toBe(301);
    r.clock.advance(31_000);
    // 61 s after the first batch: the next try prunes every address whose tries are all stale.
    await refused("wrong", "192.0.2.2");
    expect(await addresses()).toBe(2);
    await refused("wrong", "192.0.2.1");
    await refused(ADMIN_SECRET, "192.0.2.1", "too many admin login attempts");
  });
});
