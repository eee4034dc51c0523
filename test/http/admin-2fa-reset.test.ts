import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { buildBinary, runCli } from "../helpers/cli.ts";

// An admin helps a user who lost their authenticator: sees their sign-in state, turns 2FA off,
// and lists and revokes their API keys, through the admin API and the CLI.

setDefaultTimeout(60_000);
const t = createTestApp({ env: { LOCKOUT_MAX_ATTEMPTS: "3" } });
afterAll(() => t.close());

const STEP = 30_000;
const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });

async function userWith2fa(app: TestApp, email: string) {
  const u = await registerUser(app, email);
  const setup = await app.req("POST", "/api/v1/auth/2fa/setup", { token: u.token });
  const totp = URI.parse(setup.body.otpauth_url) as TOTP;
  const enable = await app.req("POST", "/api/v1/auth/2fa/enable", { body: { code: totp.generate({ timestamp: app.clock.now() }) }, token: u.token });
  expect(enable.status).toBe(200);
  app.clock.advance(STEP);
  return { ...u, totp, recovery: enable.body.recovery_codes as string[] };
}

describe("admin view of a user's sign-in security", () => {
  test("security shows 2FA, lockout, linked accounts and API keys; reset-2fa turns 2FA off and kills pending 2FA logins", async () => {
    const u = await userWith2fa(t, "lost-phone@example.test");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { body: { name: "ci" }, token: u.token });
    expect(key.status).toBe(201);

    const sec = await t.admin("GET", `/api/v1/admin/users/${u.id}/security`);
    expect(sec.status).toBe(200);
    expect(sec.body).toEqual({
      id: u.id,
      email: "lost-phone@example.test",
      totp_enabled: true,
      locked_until: null,
      oauth_accounts: [],
      api_keys: [{ id: key.body.id, name: "ci", created_at: key.body.created_at, last_used_at: null }],
    });
    // The email works as well as the id.
    expect((await t.admin("GET", `/api/v1/admin/users/lost-phone@example.test/security`)).body.id).toBe(u.id);

    const pending = await post("/login", { email: "lost-phone@example.test", password: "password123" });
    expect(pending.body).toEqual({ totp_required: true, totp_token: expect.any(String) });

    const reset = await t.admin("POST", `/api/v1/admin/users/${u.id}/reset-2fa`);
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ id: u.id, totp_enabled: false });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });

    // The second step opened before the reset is dead; a recovery code from before is gone too.
    const late = await post("/2fa/verify", { totp_token: pending.body.totp_token, code: u.totp.generate({ timestamp: t.clock.now() }) });
    expect(late.status).toBe(401);
    // The password alone now signs in; the user may set up 2FA again.
    const again = await post("/login", { email: "lost-phone@example.test", password: "password123" });
    expect(again.status).toBe(200);
    expect(again.body.access_token).toEqual(expect.any(String));
    expect((await post("/2fa/setup", undefined, again.body.access_token)).status).toBe(200);
    // Resetting again is harmless.
    expect((await t.admin("POST", `/api/v1/admin/users/${u.id}/reset-2fa`)).body.totp_enabled).toBe(false);
  });

  test("a locked account shows when the lock ends; unlock clears it", async () => {
    const u = await registerUser(t, "locked-out@example.test");
    for (let i = 0; i < 3; i++) await post("/login", { email: "locked-out@example.test", password: "wrong-password" });
    const sec = (await t.admin("GET", `/api/v1/admin/users/${u.id}/security`)).body;
    expect(sec.locked_until).toBeGreaterThan(t.clock.now());
    await t.admin("POST", `/api/v1/admin/users/${u.id}/unlock`);
    expect((await t.admin("GET", `/api/v1/admin/users/${u.id}/security`)).body).toMatchObject({ locked_until: null });
  });

  test("an admin lists and revokes a user's API keys; the revoked key stops working at once", async () => {
    const u = await registerUser(t, "keys@example.test");
    const other = await registerUser(t, "other-keys@example.test");
    const k1 = (await t.req("POST", "/api/v1/auth/api-keys", { body: { name: "one" }, token: u.token })).body;
    const k2 = (await t.req("POST", "/api/v1/auth/api-keys", { body: { name: "two" }, token: u.token })).body;
    const ko = (await t.req("POST", "/api/v1/auth/api-keys", { body: { name: "theirs" }, token: other.token })).body;
    const list = await t.admin("GET", `/api/v1/admin/users/${u.id}/api-keys`);
    expect(list.body.items.map((k: { name: string }) => k.name)).toEqual(["one", "two"]);
    expect(Object.keys(list.body.items[0]).sort()).toEqual(["created_at", "id", "last_used_at", "name"]);

    await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "authenticated" } });
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": k1.key } })).status).toBe(200);
    expect(await t.admin("DELETE", `/api/v1/admin/users/${u.id}/api-keys/${k1.id}`)).toMatchObject({ status: 200, body: { ok: true, id: k1.id } });
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": k1.key } })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": k2.key } })).status).toBe(200);

    // Another user's key, an already revoked key and an unknown user are 404.
    expect((await t.admin("DELETE", `/api/v1/admin/users/${u.id}/api-keys/${ko.id}`)).body).toEqual({ error: "API key not found", code: "not_found" });
    expect((await t.admin("DELETE", `/api/v1/admin/users/${u.id}/api-keys/${k1.id}`)).status).toBe(404);
    expect((await t.admin("GET", `/api/v1/admin/users/nobody/security`)).status).toBe(404);
    expect((await t.admin("POST", `/api/v1/admin/users/nobody/reset-2fa`)).status).toBe(404);
  });

  test("PATCH /admin/users/:id with totp_enabled false turns 2FA off too; true is 400", async () => {
    const u = await userWith2fa(t, "patch-2fa@example.test");
    const on = await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { totp_enabled: true });
    expect(on.status).toBe(400);
    expect(on.body).toEqual({ error: "totp_enabled can only be set to false: users turn two-factor authentication on themselves", code: "bad_request" });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: true });
    const off = await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { totp_enabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ id: u.id, email: "patch-2fa@example.test" });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });
    // The password alone signs in now.
    const login = await post("/login", { email: "patch-2fa@example.test", password: "password123" });
    expect(login.body.access_token).toEqual(expect.any(String));
  });

  test("the new calls need admin credentials", async () => {
    const u = await registerUser(t, "plain@example.test");
    for (const [method, path] of [
      ["GET", `/api/v1/admin/users/${u.id}/security`],
      ["POST", `/api/v1/admin/users/${u.id}/reset-2fa`],
      ["GET", `/api/v1/admin/users/${u.id}/api-keys`],
    ] as const) {
      expect((await t.req(method, path)).status).toBe(401);
      expect((await t.req(method, path, { token: u.token })).status).toBe(403);
    }
  });
});

describe("baas users reset-2fa and security", () => {
  test("the CLI shows the security object and turns 2FA off on the data directory", async () => {
    const bin = await buildBinary();
    const app = createTestApp();
    try {
      const u = await userWith2fa(app, "cli-2fa@example.test");
      // The app's data: its data directory, and on PostgreSQL its database.
      const data = ["--data", app.dir, ...(app.databaseUrl ? ["--database", await app.databaseUrl] : [])];
      const shown = await runCli(bin, ["users", "security", "cli-2fa@example.test", ...data]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain("two_factor:     on");
      const reset = await runCli(bin, ["users", "reset-2fa", "cli-2fa@example.test", "--json", ...data]);
      expect(reset.code).toBe(0);
      expect(reset.json()).toMatchObject({ id: u.id, email: "cli-2fa@example.test", totp_enabled: false, api_keys: [], oauth_accounts: [] });
      expect((await app.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });
      const human = await runCli(bin, ["users", "reset-2fa", u.id, ...data]);
      expect(human.stdout.trim()).toBe("two-factor authentication is off for cli-2fa@example.test");
      const missing = await runCli(bin, ["users", "reset-2fa", "ghost@example.test", ...data]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("user not found");
    } finally {
      await app.close();
    }
  });
});
