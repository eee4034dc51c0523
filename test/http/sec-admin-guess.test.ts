import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ADMIN_SECRET, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { secondEngine } from "../helpers/engine.ts";

setDefaultTimeout(30_000);

const RULES = { read: "public", create: "public" };

/**
 * A fresh app with a public collection, so wrong credentials are the only thing that can fail; with
 * `sharing`, a second app on that one's data (its data directory; on PostgreSQL its database).
 */
async function freshApp(sharing?: TestApp): Promise<TestApp> {
  const t = createTestApp(sharing ? { dir: sharing.dir, context: await secondEngine(sharing) } : {});
  if (!sharing) expect((await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: RULES })).status).toBe(201);
  return t;
}

const adminList = (t: TestApp, headers: Record<string, string>) => t.req("GET", "/api/v1/admin/collections", { headers });

describe("wrong admin credentials are limited on every route", () => {
  let t: TestApp;
  beforeAll(async () => (t = await freshApp()));
  afterAll(() => t.close());

  test("10 wrong Bearer values on the data API are 401 'invalid admin credentials'; the 11th try, even the right secret, is 429 rate_limited", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await t.req("GET", "/api/v1/notes", { token: `guess-${i}` });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: "invalid admin credentials", code: "unauthorized" });
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
    }
    const limited = await t.req("GET", "/api/v1/notes", { token: "guess-10" });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: expect.any(String), code: "rate_limited" });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect((await adminList(t, { authorization: `Bearer ${ADMIN_SECRET}` })).status).toBe(429);
    expect((await adminList(t, { "x-admin-token": ADMIN_SECRET })).status).toBe(429);
    expect((await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } })).status).toBe(429);
    // Anonymous and user requests are not affected.
    expect((await t.req("GET", "/api/v1/notes")).status).toBe(200);
    t.clock.advance(61_000);
    expect((await adminList(t, { authorization: `Bearer ${ADMIN_SECRET}` })).status).toBe(200);
  });
});

describe("one count for /admin/login, X-Admin-Token and Bearer", () => {
  test("wrong tries through the three doors add up to the same limit", async () => {
    const t = await freshApp();
    try {
      const doors = [
        () => t.req("POST", "/api/v1/admin/login", { body: { secret: "nope" } }),
        () => adminList(t, { "x-admin-token": "nope" }),
        () => t.req("POST", "/api/v1/notes", { token: "nope", body: { a: 1 } }),
        () => adminList(t, { "x-admin-token": "eyJhbGciOiJIUzI1NiJ9.eyJ0eXAiOiJhZG1pbiJ9.AAAA" }),
      ];
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await doors[i % doors.length]()).status);
      expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
    } finally {
      await t.close();
    }
  });

  test("300 concurrent guesses: exactly 10 are compared (401), the rest are 429", async () => {
    const t = await freshApp();
    try {
      const res = await Promise.all(Array.from({ length: 300 }, (_, i) => t.req("GET", "/api/v1/notes", { token: `burst-${i}` })));
      const statuses = res.map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(290);
    } finally {
      await t.close();
    }
  });
});

describe("a user's credentials are not admin guesses", () => {
  let t: TestApp;
  beforeAll(async () => (t = await freshApp()));
  afterAll(() => t.close());

  test("expired and revoked access tokens, a token in X-Admin-Token and an API key as Bearer are 401 but never count", async () => {
    const u = await registerUser(t, "not-a-guess@example.test");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "k" } });
    expect(key.status).toBe(201);
    const revoked = await registerUser(t, "revoked@example.test");
    expect((await t.req("POST", "/api/v1/auth/logout", { token: revoked.token })).status).toBe(200);
    for (let i = 0; i < 12; i++) {
      expect((await t.req("GET", "/api/v1/notes", { token: revoked.token })).status).toBe(401);
      expect((await t.req("GET", "/api/v1/notes", { token: key.body.key })).status).toBe(401);
      expect((await adminList(t, { "x-admin-token": u.token })).status).toBe(401);
    }
    t.clock.advance(3600_000);
    for (let i = 0; i < 12; i++) expect((await t.req("GET", "/api/v1/notes", { token: u.token })).status).toBe(401);
    expect((await adminList(t, { authorization: `Bearer ${ADMIN_SECRET}` })).status).toBe(200);
  });
});

describe("the count lives in the database", () => {
  test("a second process on the same data directory sees the limit reached through the first", async () => {
    const a = await freshApp();
    const b = await freshApp(a);
    try {
      for (let i = 0; i < 10; i++) expect((await a.req("GET", "/api/v1/notes", { token: `guess-${i}` })).status).toBe(401);
      expect((await b.req("GET", "/api/v1/notes", { token: "one-more" })).status).toBe(429);
      expect((await b.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } })).status).toBe(429);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe("routes that act for no caller", () => {
  test("register, login, refresh, the mail flows, OAuth and the OpenAPI document refuse and count a guess; 11th is 429; health probes look at none", async () => {
    const t = await freshApp();
    try {
      const guess = (i: number) => ({ authorization: `Bearer public-guess-${i}` });
      const doors: ((i: number) => Promise<{ status: number; body: any }>)[] = [
        (i) => t.req("POST", "/api/v1/auth/register", { headers: guess(i), body: { email: `g${i}@example.test`, password: "password123" } }),
        (i) => t.req("POST", "/api/v1/auth/login", { headers: { "x-admin-token": `public-guess-${i}` }, body: { email: "x@example.test", password: "password123" } }),
        (i) => t.req("POST", "/api/v1/auth/refresh", { headers: guess(i), body: { refresh_token: "r" } }),
        (i) => t.req("POST", "/api/v1/auth/forgot-password", { headers: guess(i), body: { email: "x@example.test" } }),
        (i) => t.req("POST", "/api/v1/auth/magic-link", { headers: guess(i), body: { email: "x@example.test" } }),
        (i) => t.req("GET", "/api/v1/auth/oauth/codehost", { headers: guess(i) }),
        (i) => t.req("GET", "/api/v1/openapi.json", { headers: guess(i) }),
        (i) => t.req("POST", "/api/v1/auth/reset-password", { headers: guess(i), body: { token: "t", password: "password123" } }),
        (i) => t.req("POST", "/api/v1/auth/magic-link/verify", { headers: guess(i), body: { token: "t" } }),
        (i) => t.req("POST", "/api/v1/auth/2fa/verify", { headers: guess(i), body: { totp_token: "t", code: "123456" } }),
      ];
      const answers = [];
      for (let i = 0; i < doors.length; i++) answers.push(await doors[i]!(i));
      expect(answers.map((a) => [a.status, a.body.error])).toEqual(Array(10).fill([401, "invalid admin credentials"]));
      expect((await t.req("POST", "/api/v1/auth/login", { headers: guess(10), body: { email: "x@example.test", password: "password123" } })).status).toBe(429);
      expect((await adminList(t, { authorization: `Bearer ${ADMIN_SECRET}` })).status).toBe(429);
      // Probes answer whatever they are sent.
      for (const path of ["/health", "/api/v1/ready"]) expect((await t.req("GET", path, { headers: guess(11) })).status).toBe(200);
      // Nothing was done for the refused requests.
      expect((await t.req("POST", "/api/v1/auth/login", { body: { email: "g0@example.test", password: "password123" } })).status).toBe(401);
    } finally {
      await t.close();
    }
  });

  test("a user's token, even expired, and the admin secret pass: a refresh sent with the expired access token works", async () => {
    const t = await freshApp();
    try {
      const u = await t.req("POST", "/api/v1/auth/register", { body: { email: "refresher@example.test", password: "password123" } });
      t.clock.advance(3600_000);
      const refreshed = await t.req("POST", "/api/v1/auth/refresh", { token: u.body.access_token, body: { refresh_token: u.body.refresh_token } });
      expect(refreshed.status).toBe(200);
      expect((await t.req("POST", "/api/v1/auth/login", { token: refreshed.body.access_token, body: { email: "refresher@example.test", password: "password123" } })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
