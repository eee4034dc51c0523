import { afterEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// One log line per request (method, path with secrets redacted, status, duration, request id), every 5xx
// with its cause, and no credential ever in the log.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function app(opts: Parameters<typeof createTestApp>[0] = {}) {
  const t = createTestApp({ requestLog: true, ...opts });
  apps.push(t);
  return t;
}

const requestLines = (t: TestApp) => t.log.lines.filter((l) => l.msg === "request");

describe("request log", () => {
  test("each request is one line with method, path, status, duration and the id sent back in X-Request-Id", async () => {
    const t = app();
    const res = await t.req("GET", "/health");
    expect(res.status).toBe(200);
    const id = res.headers.get("x-request-id");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const lines = requestLines(t);
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe("info");
    expect(lines[0].fields).toEqual({ method: "GET", path: "/health", status: 200, duration_ms: expect.any(Number), request_id: id });
  });

  test("4xx answers are logged too, one line each, unknown routes and bad JSON included", async () => {
    const t = app();
    for (let i = 0; i < 30; i++) expect((await t.req("GET", `/api/v1/nope${i}`)).status).toBe(404);
    expect((await t.req("POST", "/api/v1/auth/login", { body: "{bad" })).status).toBe(400);
    expect((await t.req("GET", "/api/v1/admin/collections")).status).toBe(401);
    const lines = requestLines(t);
    expect(lines).toHaveLength(32);
    expect(lines.slice(-3).map((l) => [l.fields!.method, l.fields!.path, l.fields!.status])).toEqual([
      ["GET", "/api/v1/nope29", 404],
      ["POST", "/api/v1/auth/login", 400],
      ["GET", "/api/v1/admin/collections", 401],
    ]);
  });

  test("a sane incoming X-Request-Id is kept; a malformed or oversized one is replaced", async () => {
    const t = app();
    const kept = await t.req("GET", "/health", { headers: { "x-request-id": "edge-7f3a:42" } });
    expect(kept.headers.get("x-request-id")).toBe("edge-7f3a:42");
    for (const bad of ["has space", "x".repeat(129), "quote\"d", "ünï"]) {
      const res = await t.req("GET", "/health", { headers: { "x-request-id": bad } });
      expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(requestLines(t).map((l) => l.fields!.request_id)[0]).toBe("edge-7f3a:42");
    expect(JSON.stringify(t.log.lines)).not.toContain("has space");
  });

  test("values of secret-bearing query parameters are redacted, other parameters stay as sent", async () => {
    const t = app();
    await t.req("GET", "/api/v1/auth/verify-email?token=TOKEN-SECRET-1&lang=en");
    await t.req("GET", "/api/v1/auth/oauth/oidc/callback?code=CODE-SECRET-2&state=STATE-SECRET-3");
    await t.req("GET", "/api/v1/posts?limit=5&access_token=AT-SECRET-4&Password=PW-SECRET-5&api%5Fkey=KEY-SECRET-6");
    expect(requestLines(t).map((l) => l.fields!.path)).toEqual([
      "/api/v1/auth/verify-email?token=***&lang=en",
      "/api/v1/auth/oauth/oidc/callback?code=***&state=***",
      "/api/v1/posts?limit=5&access_token=***&Password=***&api%5Fkey=***",
    ]);
    expect(JSON.stringify(t.log.lines)).not.toMatch(/SECRET/);
  });

  test("passwords, tokens, API keys and the admin secret never reach the log", async () => {
    const t = app();
    const password = "pw-never-logged-7781";
    const u = await registerUser(t, "logme@example.test", password);
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "logme@example.test", password } });
    expect(login.status).toBe(200);
    await t.req("POST", "/api/v1/auth/login", { body: { email: "logme@example.test", password: "wrong-password-3321" } });
    const refreshed = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: u.refresh } });
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "ci" } });
    await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "public", create: "authenticated" } });
    await t.req("POST", "/api/v1/notes", { token: u.token, body: { text: "hello" } });
    await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": key.body.key } });
    await t.req("GET", "/api/v1/admin/collections", { headers: { "x-admin-token": ADMIN_SECRET } });
    await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    const log = JSON.stringify(t.log.lines);
    expect(requestLines(t).length).toBeGreaterThanOrEqual(10);
    const secrets = [password, "wrong-password-3321", u.token, u.refresh, login.body.access_token, login.body.refresh_token, refreshed.body.access_token, key.body.key, ADMIN_SECRET];
    for (const secret of secrets) {
      expect(typeof secret).toBe("string");
      expect(log).not.toContain(secret);
    }
  });

  test("a 5xx is logged at error level with its cause, under the same request id", async () => {
    let broken = false;
    const t = app({
      context: {
        clock: {
          now: () => {
            if (broken) throw new Error("the clock fell off the wall");
            return Date.now();
          },
        },
      },
    });
    broken = true;
    const res = await t.req("POST", "/api/v1/auth/register", { body: { email: "boom@example.test", password: "password123" } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal error", code: "internal" });
    const id = res.headers.get("x-request-id");
    const cause = t.log.lines.find((l) => l.msg === "unhandled error");
    expect(cause).toMatchObject({ level: "error", fields: { method: "POST", path: "/api/v1/auth/register", request_id: id } });
    expect(JSON.stringify(cause!.fields!.error)).toContain("the clock fell off the wall");
    expect(requestLines(t).at(-1)).toMatchObject({ level: "error", fields: { status: 500, request_id: id } });
  });

  test("a 5xx the code answers on purpose (here a hook's 503) is logged with its cause too", async () => {
    const t = app({
      context: {
        hooks: {
          list: [
            {
              collection: "jobs",
              beforeCreate: () => {
                throw Object.assign(new Error("the queue is down"), { status: 503 });
              },
            },
          ],
        },
      },
    });
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "jobs", rules: { create: "public" } })).status).toBe(201);
    const res = await t.req("POST", "/api/v1/jobs", { body: { n: 1 } });
    expect(res.status).toBe(503);
    const id = res.headers.get("x-request-id");
    expect(t.log.lines.find((l) => l.msg === "server error")).toMatchObject({
      level: "error",
      fields: { method: "POST", path: "/api/v1/jobs", request_id: id, status: 503, code: "hook_rejected", error: "the queue is down" },
    });
    expect(requestLines(t).at(-1)).toMatchObject({ level: "error", fields: { status: 503, request_id: id } });
  });

  test("the request log can be left out (the test apps do), the X-Request-Id header with it", async () => {
    const t = app({ requestLog: false });
    const res = await t.req("GET", "/health");
    expect(res.headers.get("x-request-id")).toBeNull();
    expect(requestLines(t)).toHaveLength(0);
  });
});
