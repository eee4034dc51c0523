import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { registerUser, type TestApp } from "../helpers/app.ts";
import { runBrowserFlow } from "../helpers/browser-flow.ts";
import { startProviderStub, type ProviderStub } from "../helpers/oauth-stubs.ts";
import { createMailTestApp, type SmtpCapture } from "../helpers/smtp.ts";

// Password hashing (argon2id) is slow on a loaded machine.
setDefaultTimeout(60_000);

let t: TestApp;
let smtp: SmtpCapture;
let stub: ProviderStub;
let closeApp: () => Promise<void>;

beforeAll(async () => {
  stub = await startProviderStub("codehost");
  ({ t, smtp, close: closeApp } = await createMailTestApp({
    PUBLIC_URL: "http://localhost",
    APP_URL: "http://app.test",
    OAUTH_CODEHOST_BASE_URL: stub.url,
  }));
  const settings = await t.admin("PATCH", "/api/v1/admin/settings", {
    oauth_codehost_client_id: stub.clientId,
    oauth_codehost_client_secret: stub.clientSecret,
  });
  expect(settings.status).toBe(200);
  const notes = await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "owner", create: "authenticated" } });
  expect(notes.status).toBe(201);
});
afterAll(async () => {
  stub?.stop();
  await closeApp?.();
});

const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });

/**
 * What an attacker sets up on an address they do not own: a password, a session, an API key,
 * and 2FA with recovery codes. Returns all of it.
 */
async function preRegister(email: string) {
  const u = await registerUser(t, email, "attacker-password");
  const key = await post("/api-keys", { name: "mine" }, u.token);
  expect(key.status).toBe(201);
  const setup = await post("/2fa/setup", undefined, u.token);
  const totp = URI.parse(setup.body.otpauth_url) as TOTP;
  const enable = await post("/2fa/enable", { code: totp.generate({ timestamp: t.clock.now() }) }, u.token);
  expect(enable.status).toBe(200);
  t.clock.advance(30_000);
  return { ...u, apiKey: key.body.key as string, recovery: enable.body.recovery_codes as string[] };
}

/** After the owner proved the address: none of the attacker's credentials work any more. */
async function expectAttackerLockedOut(email: string, attacker: Awaited<ReturnType<typeof preRegister>>) {
  expect((await t.req("GET", "/api/v1/auth/me", { token: attacker.token })).status).toBe(401);
  expect((await post("/refresh", { refresh_token: attacker.refresh })).status).toBe(401);
  const viaKey = await t.req("GET", "/api/v1/notes", { headers: { "x-api-key": attacker.apiKey } });
  expect(viaKey.status).toBe(401);
  const pw = await post("/login", { email, password: "attacker-password" });
  expect(pw.status).toBe(401);
  expect(pw.body).toEqual({ error: "invalid email or password", code: "invalid_credentials" });
}

describe("the first proof of a never-verified address drops what a pre-registration set up", () => {
  test("magic link: the owner gets a session without the attacker's 2FA, and the attacker's password, session, key and recovery codes are dead", async () => {
    const email = "victim-ml@example.test";
    const attacker = await preRegister(email);
    expect((await post("/magic-link", { email })).status).toBe(200);
    await t.ctx.mailer.flush();
    const res = await post("/magic-link/verify", { token: smtp.lastToken(email) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", user: { email, is_verified: true } });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: res.body.access_token })).body).toEqual({ enabled: false });
    await expectAttackerLockedOut(email, attacker);
    // A recovery code cannot finish any login either: a second magic link ends in a session, not totp_required.
    await post("/magic-link", { email });
    await t.ctx.mailer.flush();
    expect((await post("/magic-link/verify", { token: smtp.lastToken(email) })).body.access_token).toEqual(expect.any(String));
  });

  test("OAuth linking: the owner is not sent to totp_required, and the attacker's credentials are dead", async () => {
    const email = "victim-oauth@example.test";
    const attacker = await preRegister(email);
    stub.loginAs = { id: 90210, login: "victim", emails: [{ email, primary: true, verified: true }] };
    const flow = await runBrowserFlow(t, "/api/v1/auth/oauth/codehost");
    expect(flow.params.totp_required).toBeUndefined();
    expect(flow.params.access_token).toEqual(expect.any(String));
    const me = await t.req("GET", "/api/v1/auth/me", { token: flow.params.access_token });
    expect(me.body).toMatchObject({ email, is_verified: true });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: flow.params.access_token })).body).toEqual({ enabled: false });
    await expectAttackerLockedOut(email, attacker);
  });

  test("password reset on a never-verified account also drops the TOTP secret and recovery codes", async () => {
    const email = "victim-reset@example.test";
    await preRegister(email);
    expect((await post("/forgot-password", { email })).status).toBe(200);
    await t.ctx.mailer.flush();
    const reset = await post("/reset-password", { token: smtp.lastToken(email), password: "owner-password-1" });
    expect(reset.status).toBe(200);
    const login = await post("/login", { email, password: "owner-password-1" });
    expect(login.status).toBe(200);
    expect(login.body.totp_required).toBeUndefined();
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: login.body.access_token })).body).toEqual({ enabled: false });
  });

  test("a verified account keeps its password and 2FA through a magic link", async () => {
    const email = "verified-owner@example.test";
    const owner = await preRegister(email);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${owner.id}`, { is_verified: true })).status).toBe(200);
    await post("/magic-link", { email });
    await t.ctx.mailer.flush();
    const res = await post("/magic-link/verify", { token: smtp.lastToken(email) });
    expect(res.body).toEqual({ totp_required: true, totp_token: expect.any(String) });
    expect((await t.req("GET", "/api/v1/auth/me", { token: owner.token })).status).toBe(200);
    const pw = await post("/login", { email, password: "attacker-password" });
    expect(pw.body.totp_required).toBe(true);
  });
});
