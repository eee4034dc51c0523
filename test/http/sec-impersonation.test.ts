import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";

setDefaultTimeout(30_000);

const t = createTestApp();
afterAll(() => t.close());

let user: Awaited<ReturnType<typeof registerUser>>;
let imp: string;

beforeAll(async () => {
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "diary", rules: { read: "owner", create: "authenticated" } })).status).toBe(201);
  user = await registerUser(t, "impersonated@example.test");
  const res = await t.admin("POST", `/api/v1/admin/users/${user.id}/impersonate`);
  expect(res.status).toBe(200);
  imp = res.body.access_token;
});

const FORBIDDEN_CALLS: [string, string, unknown?][] = [
  ["POST", "/api/v1/auth/api-keys", { name: "forever" }],
  ["GET", "/api/v1/auth/api-keys"],
  ["DELETE", "/api/v1/auth/api-keys/01J00000000000000000000000"],
  ["POST", "/api/v1/auth/2fa/setup"],
  ["POST", "/api/v1/auth/2fa/enable", { code: "123456" }],
  ["DELETE", "/api/v1/auth/2fa/disable", { code: "123456" }],
  ["GET", "/api/v1/auth/2fa/status"],
  ["PATCH", "/api/v1/auth/me", { metadata: { owned: true } }],
  ["PATCH", "/api/v1/auth/me/", { metadata: { owned: true } }],
  ["POST", "/api/v1/auth/logout"],
  ["POST", "/api/v1/auth/logout-all"],
  ["POST", "/api/v1/auth/resend-verification"],
  ["GET", "/api/v1/auth/oauth/accounts"],
  ["DELETE", "/api/v1/auth/oauth/codehost"],
  ["POST", "/api/v1/auth/login", { email: "impersonated@example.test", password: "password123" }],
];

describe("impersonation tokens", () => {
  test.each(FORBIDDEN_CALLS)("%s %s with an impersonation token is 403 forbidden", async (method, path, body) => {
    const res = await t.req(method, path, { token: imp, body });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), code: "forbidden" });
  });

  test("nothing was changed by the refused calls: no API key, metadata untouched, sessions alive", async () => {
    for (const [method, path, body] of FORBIDDEN_CALLS) await t.req(method, path, { token: imp, body });
    const keys = await t.req("GET", "/api/v1/auth/api-keys", { token: user.token });
    expect(keys.status).toBe(200);
    expect(keys.body).toEqual({ items: [] });
    const me = await t.req("GET", "/api/v1/auth/me", { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.metadata.owned).toBeUndefined();
  });

  test("GET /auth/me and the data API work with an impersonation token", async () => {
    const me = await t.req("GET", "/api/v1/auth/me", { token: imp });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, email: "impersonated@example.test" });
    const created = await t.req("POST", "/api/v1/diary", { token: imp, body: { text: "written as the user" } });
    expect(created.status).toBe(201);
    const list = await t.req("GET", "/api/v1/diary", { token: imp });
    expect(list.status).toBe(200);
    expect(list.body.items.map((r: { text: string }) => r.text)).toEqual(["written as the user"]);
  });

  test("the user's own access token still works on the /auth calls an impersonation token may not use", async () => {
    const res = await t.req("PATCH", "/api/v1/auth/me", { token: user.token, body: { metadata: { theme: "dark" } } });
    expect(res.status).toBe(200);
    expect(res.body.metadata).toEqual({ theme: "dark" });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: user.token })).status).toBe(200);
  });
});
