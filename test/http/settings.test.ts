import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";
import { createMailTestApp } from "../helpers/smtp.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

const { t, smtp, close } = await createMailTestApp();
afterAll(close);

const S = "/api/v1/admin/settings";
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
const login = (email: string, password = "password123") => t.req("POST", "/api/v1/auth/login", { body: { email, password } });

/** Runs `fn` with some settings changed, restoring the defaults after. */
async function withSettings(patch: Record<string, unknown>, fn: () => Promise<void>) {
  const before = (await t.admin("GET", S)).body;
  expect((await t.admin("PATCH", S, patch)).status).toBe(200);
  try {
    await fn();
  } finally {
    const restore: Record<string, unknown> = {};
    for (const k of Object.keys(patch)) restore[k] = before[k];
    await t.admin("PATCH", S, restore);
  }
}

describe("runtime settings", () => {
  test("GET answers every setting with its default", async () => {
    // A fresh app: the shared one carries what other tests of this file set.
    const fresh = createTestApp();
    const res = await fresh.admin("GET", S);
    await fresh.close();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      app_name: "baas",
      access_token_ttl_seconds: 900,
      refresh_token_ttl_days: 30,
      auth_password_enabled: true,
      auth_magic_link_enabled: true,
      auth_totp_enabled: true,
      auth_oauth_enabled: true,
      auth_api_keys_enabled: true,
      registration_open: true,
      oauth_oidc_scopes: "openid email profile",
      oauth_codehost_client_secret: "",
    });
  });

  test("PATCH answers the whole changed object; client secrets read back masked and survive being sent back masked", async () => {
    const res = await t.admin("PATCH", S, { oauth_codehost_client_id: "cid", oauth_codehost_client_secret: "s3cret-value" });
    expect(res.status).toBe(200);
    expect(res.body.oauth_codehost_client_id).toBe("cid");
    expect(res.body.oauth_codehost_client_secret).toBe("********");
    expect((await t.admin("GET", S)).body.oauth_codehost_client_secret).toBe("********");
    expect(JSON.stringify((await t.admin("GET", S)).body)).not.toContain("s3cret-value");
    await t.admin("PATCH", S, { oauth_codehost_client_secret: "********" });
    const row = await t.db.get<{ value: string }>("SELECT value FROM _settings WHERE key = ?", ["oauth_codehost_client_secret"]);
    expect(JSON.parse(row!.value)).toBe("s3cret-value");
    // Back to the defaults, so the other tests of this shared app see them in any order.
    expect((await t.admin("PATCH", S, { oauth_codehost_client_id: "", oauth_codehost_client_secret: "" })).status).toBe(200);
  });

  test("an unknown key or a wrong type is 400 and changes nothing", async () => {
    for (const body of [{ nope: 1 }, { access_token_ttl_seconds: "900" }, { access_token_ttl_seconds: 1.5 }, { registration_open: "false" }, { app_name: 3 }, [1], { app_name: "ok", bogus: true }]) {
      const res = await t.admin("PATCH", S, body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
    }
    expect((await t.admin("GET", S)).body.app_name).toBe("baas");
  });

  test("an empty app_name (the TOTP issuer and mail sender name) is 400 and changes nothing", async () => {
    for (const app_name of ["", "   "]) {
      const res = await t.admin("PATCH", S, { app_name });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'setting "app_name" must not be empty', code: "bad_request" });
    }
    expect((await t.admin("GET", S)).body.app_name).toBe("baas");
  });

  test("settings need admin credentials", async () => {
    const u = await registerUser(t, "set0@example.test");
    expect((await t.req("GET", S)).status).toBe(401);
    expect((await t.req("PATCH", S, { token: u.token, body: { app_name: "x" } })).status).toBe(403);
  });

  test("a new access-token TTL applies to tokens issued afterwards only", async () => {
    const u = await registerUser(t, "ttl1@example.test");
    expect(u.body.expires_in).toBe(900);
    await withSettings({ access_token_ttl_seconds: 60, refresh_token_ttl_days: 1 }, async () => {
      const fresh = await login("ttl1@example.test");
      expect(fresh.body.expires_in).toBe(60);
      const c = claimsOf(fresh.body.access_token);
      expect(c.exp - c.iat).toBe(60);
      const old = claimsOf(u.token);
      expect(old.exp - old.iat).toBe(900);
      t.clock.advance(120_000);
      expect((await t.req("GET", "/api/v1/auth/me", { token: fresh.body.access_token })).status).toBe(401);
      expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(200);
      const sessions = (await t.admin("GET", `/api/v1/admin/users/${u.id}/sessions`)).body.items;
      const lifetimes = sessions.map((x: { expires_at: number; created_at: number }) => x.expires_at - x.created_at).sort((a: number, b: number) => a - b);
      expect(lifetimes).toEqual([86_400_000, 30 * 86_400_000]);
    });
  });

  test("disabling password auth gives 403 method_disabled at once for login and register, while existing sessions and refresh keep working", async () => {
    const u = await registerUser(t, "pw1@example.test");
    await withSettings({ auth_password_enabled: false }, async () => {
      const l = await login("pw1@example.test");
      expect(l.status).toBe(403);
      expect(l.body).toEqual({ error: expect.any(String), code: "method_disabled" });
      const r = await t.req("POST", "/api/v1/auth/register", { body: { email: "pw2@example.test", password: "password123" } });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("method_disabled");
      expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(200);
      expect((await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: u.refresh } })).status).toBe(200);
    });
    expect((await login("pw1@example.test")).status).toBe(200);
  });

  test("disabling magic links gives 403 method_disabled for the request and for a link already mailed", async () => {
    await registerUser(t, "ml1@example.test");
    await t.req("POST", "/api/v1/auth/magic-link", { body: { email: "ml1@example.test" } });
    await t.ctx.mailer.flush();
    const token = smtp.lastToken("ml1@example.test");
    await withSettings({ auth_magic_link_enabled: false }, async () => {
      const req = await t.req("POST", "/api/v1/auth/magic-link", { body: { email: "ml1@example.test" } });
      expect(req.status).toBe(403);
      expect(req.body.code).toBe("method_disabled");
      expect((await t.req("POST", "/api/v1/auth/magic-link/verify", { body: { token } })).status).toBe(403);
    });
    expect((await t.req("POST", "/api/v1/auth/magic-link/verify", { body: { token } })).status).toBe(200);
  });

  test("registration_open false closes /auth/register with 403 registration_closed, login still works", async () => {
    await registerUser(t, "open1@example.test");
    await withSettings({ registration_open: false }, async () => {
      const r = await t.req("POST", "/api/v1/auth/register", { body: { email: "closed@example.test", password: "password123" } });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: expect.any(String), code: "registration_closed" });
      expect((await login("open1@example.test")).status).toBe(200);
      expect((await t.admin("POST", "/api/v1/admin/users", { email: "by-admin@example.test" })).status).toBe(201);
    });
    expect((await t.req("POST", "/api/v1/auth/register", { body: { email: "closed@example.test", password: "password123" } })).status).toBe(201);
  });
});
