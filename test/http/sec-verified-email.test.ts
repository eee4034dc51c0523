import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { mailTime } from "../../src/mail/templates.ts";
import { createCollection, patchSettings, registerUser, type TestApp } from "../helpers/app.ts";
import { createMailTestApp } from "../helpers/smtp.ts";

// A pre-registration (CONTRACT §8c): anyone can register an address they do not own. The verification link
// confirms the registration as it is; the setting require_verified_email (default false) makes password login,
// refresh and API-key creation of a never-verified account 403 email_not_verified, so that with it on a
// pre-registration holds nothing usable. The mail says when the account was registered.

setDefaultTimeout(60_000);

// A low lockout limit, so that "no slot taken" shows in a few logins.
const { t, smtp, close } = await createMailTestApp({ LOCKOUT_MAX_ATTEMPTS: "3" });
afterAll(close);

const PASSWORD = "password123";
const NOT_VERIFIED = { error: expect.any(String), code: "email_not_verified" };
const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });
const login = (email: string) => post("/login", { email, password: PASSWORD });
const makeKey = (token: string) => post("/api-keys", { name: "k" }, token);
const refresh = (token: string) => post("/refresh", { refresh_token: token });

async function verify(email: string) {
  await t.ctx.mailer.flush();
  const res = await post("/verify-email", { token: smtp.lastToken(email) });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  await t.ready;
  await createCollection(t, "notes", { read: "authenticated", create: "authenticated" });
});

describe("require_verified_email", () => {
  test("is false by default, read and changed through the settings API", async () => {
    expect((await t.admin("GET", "/api/v1/admin/settings")).body.require_verified_email).toBe(false);
    expect((await t.admin("PATCH", "/api/v1/admin/settings", { require_verified_email: "yes" })).status).toBe(400);
  });

  test("off: a never-verified account logs in, refreshes and makes API keys as before", async () => {
    await patchSettings(t, { require_verified_email: false });
    const u = await registerUser(t, "off@example.com");
    expect((await login("off@example.com")).status).toBe(200);
    expect((await refresh(u.refresh)).status).toBe(200);
    const key = await makeKey(u.token);
    expect(key.status).toBe(201);
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": key.body.key } })).status).toBe(200);
  });

  test("on: login, refresh, API-key creation and API-key use are 403 email_not_verified until the address is confirmed", async () => {
    await patchSettings(t, { require_verified_email: false });
    // Set up while the setting is off: a key made then must not survive the switch either.
    const u = await registerUser(t, "victim@example.com");
    const oldKey = (await makeKey(u.token)).body.key as string;
    await patchSettings(t, { require_verified_email: true });

    const denied = await login("victim@example.com");
    expect([denied.status, denied.body]).toEqual([403, NOT_VERIFIED]);
    expect([(await refresh(u.refresh)).status, (await refresh(u.refresh)).body]).toEqual([403, NOT_VERIFIED]);
    expect((await makeKey(u.token)).body).toEqual(NOT_VERIFIED);
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": oldKey } })).body).toEqual(NOT_VERIFIED);
    // A wrong password is still the usual 401: the 403 tells nothing to whoever does not know the password.
    expect((await post("/login", { email: "victim@example.com", password: "wrong-password" })).body.code).toBe("invalid_credentials");
    // The registration's own access token still reads the user and asks for the mail again.
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).body.is_verified).toBe(false);
    expect((await post("/resend-verification", undefined, u.token)).status).toBe(200);

    // The owner confirms: the registration stands as it is, and every one of these works.
    await verify("victim@example.com");
    expect((await login("victim@example.com")).status).toBe(200);
    expect((await refresh(u.refresh)).status).toBe(200); // the refresh token refused before was not used up
    expect((await makeKey(u.token)).status).toBe(201);
    expect((await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": oldKey } })).status).toBe(200);
    await patchSettings(t, { require_verified_email: false });
  });

  test("on: a 2FA account gets no second step at login, nor a session from a step opened before", async () => {
    await patchSettings(t, { require_verified_email: false });
    const u = await registerUser(t, "twofa@example.com");
    const setup = await post("/2fa/setup", undefined, u.token);
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    const code = (steps = 0) => totp.generate({ timestamp: t.clock.now() + steps * 30_000 });
    expect((await post("/2fa/enable", { code: code() }, u.token)).status).toBe(200);
    t.clock.advance(60_000);
    // A second step opened while the setting was off...
    const step = await login("twofa@example.com");
    expect(step.body.totp_required).toBe(true);
    await patchSettings(t, { require_verified_email: true });
    // ... gives no session now, and a new login opens none.
    expect((await post("/2fa/verify", { totp_token: step.body.totp_token, code: code() })).body).toEqual(NOT_VERIFIED);
    expect((await login("twofa@example.com")).body).toEqual(NOT_VERIFIED);
    await verify("twofa@example.com");
    const again = await login("twofa@example.com");
    expect(again.body.totp_required).toBe(true);
    t.clock.advance(30_000);
    expect((await post("/2fa/verify", { totp_token: again.body.totp_token, code: code() })).status).toBe(200);
    await patchSettings(t, { require_verified_email: false });
  });

  test("on: the refused logins take no lockout slot, so the owner is never locked out by them", async () => {
    await patchSettings(t, { require_verified_email: true });
    await registerUser(t, "slots@example.com");
    for (let i = 0; i < 5; i++) expect((await login("slots@example.com")).status).toBe(403);
    await verify("slots@example.com");
    expect((await login("slots@example.com")).status).toBe(200);
    await patchSettings(t, { require_verified_email: false });
  });

  test("on: a magic link confirms the address itself, dropping what the pre-registration set up", async () => {
    await patchSettings(t, { require_verified_email: true });
    const attacker = await registerUser(t, "owner@example.com");
    expect((await post("/magic-link", { email: "owner@example.com" })).status).toBe(200);
    await t.ctx.mailer.flush();
    const session = await post("/magic-link/verify", { token: smtp.lastToken("owner@example.com") });
    expect(session.status).toBe(200);
    expect(session.body.user.is_verified).toBe(true);
    expect((await refresh(session.body.refresh_token)).status).toBe(200);
    expect((await refresh(attacker.refresh)).status).toBe(401);
    expect((await login("owner@example.com")).status).toBe(401);
    await patchSettings(t, { require_verified_email: false });
  });
});

describe("the verification mail", () => {
  test("says when the account was registered and to ignore it otherwise", async () => {
    const u = await registerUser(t, "when@example.com");
    await t.ctx.mailer.flush();
    const mail = smtp.to("when@example.com").at(-1)!;
    const when = mailTime(u.body.user.created_at);
    expect(when).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain(`An account was registered with this email address on ${when}.`);
      expect(part).toContain("If you did not create this account, ignore this mail");
    }
    // Sent again later, it still names the registration's time.
    t.clock.advance(10 * 60_000);
    expect((await post("/resend-verification", undefined, u.token)).status).toBe(200);
    await t.ctx.mailer.flush();
    expect(smtp.to("when@example.com").at(-1)!.text).toContain(`registered with this email address on ${when}.`);
  });
});
