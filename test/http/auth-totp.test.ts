import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { registerUser, type TestApp } from "../helpers/app.ts";
import { createMailTestApp } from "../helpers/smtp.ts";

// Password hashing (argon2id) is slow on a loaded machine (seconds a hash at a load of 15 on 2 cores);
// these tests hash a dozen times each. The budget is for such a machine; a hang still fails.
setDefaultTimeout(300_000);

const { t, smtp, close } = await createMailTestApp();
afterAll(close);

const STEP = 30_000;
const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });
const login = (email: string, password = "password123") => post("/login", { email, password });

/** The code the authenticator app would show at the test clock's time (plus `steps` periods). */
function codeAt(totp: TOTP, app: TestApp, steps = 0): string {
  return totp.generate({ timestamp: app.clock.now() + steps * STEP });
}

/** Registers a user and turns 2FA on; returns tokens, the authenticator and the recovery codes. */
async function userWith2fa(email: string) {
  const u = await registerUser(t, email);
  // Verified, as a real 2FA user is: the first proof of a never-verified address drops its 2FA.
  expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { is_verified: true })).status).toBe(200);
  const setup = await post("/2fa/setup", undefined, u.token);
  const totp = URI.parse(setup.body.otpauth_url) as TOTP;
  const enable = await post("/2fa/enable", { code: codeAt(totp, t) }, u.token);
  expect(enable.status).toBe(200);
  // The enabling code's step is now used: move on so the next code is fresh.
  t.clock.advance(STEP);
  return { ...u, totp, recovery: enable.body.recovery_codes as string[] };
}

describe("2FA setup and enable", () => {
  test("status is false, setup returns only an otpauth URL (SHA1, 6 digits, 30 s, issuer = app_name), enable returns 10 recovery codes", async () => {
    await t.admin("PATCH", "/api/v1/admin/settings", { app_name: "Acme" });
    const u = await registerUser(t, "totp1@example.test");
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });
    const setup = await post("/2fa/setup", undefined, u.token);
    expect(setup.status).toBe(200);
    expect(Object.keys(setup.body)).toEqual(["otpauth_url"]);
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    expect(totp).toBeInstanceOf(TOTP);
    expect(totp.issuer).toBe("Acme");
    expect(totp.label).toBe("totp1@example.test");
    expect(totp.algorithm).toBe("SHA1");
    expect(totp.digits).toBe(6);
    expect(totp.period).toBe(30);
    const enable = await post("/2fa/enable", { code: codeAt(totp, t) }, u.token);
    expect(enable.status).toBe(200);
    expect(enable.body.enabled).toBe(true);
    expect(enable.body.recovery_codes).toHaveLength(10);
    expect(new Set(enable.body.recovery_codes).size).toBe(10);
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: true });
    await t.admin("PATCH", "/api/v1/admin/settings", { app_name: "baas" });
  });

  test("the TOTP secret and the recovery codes are not stored in clear", async () => {
    const u = await userWith2fa("totp2@example.test");
    const row = (await t.db.get<{ totp_secret: string }>("SELECT totp_secret FROM _users WHERE id = ?", [u.id]))!;
    expect(row.totp_secret).toBeTruthy();
    expect(row.totp_secret).not.toContain(u.totp.secret.base32);
    const codes = await t.db.all<{ code_hash: string }>("SELECT code_hash FROM _recovery_codes WHERE user_id = ?", [u.id]);
    expect(codes).toHaveLength(10);
    for (const c of u.recovery) expect(codes.some((r) => r.code_hash.includes(c) || r.code_hash.includes(c.replace("-", "")))).toBe(false);
  });

  test("enable with a wrong code is 400 invalid_code and leaves 2FA off", async () => {
    const u = await registerUser(t, "totp3@example.test");
    const totp = URI.parse((await post("/2fa/setup", undefined, u.token)).body.otpauth_url) as TOTP;
    const wrong = codeAt(totp, t, 5);
    const res = await post("/2fa/enable", { code: wrong }, u.token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "invalid_code" });
    expect((await post("/2fa/enable", { code: "abc" }, u.token)).body.code).toBe("invalid_code");
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });
  });

  test("setup while enabled is 409; enable before setup is 400; without a token 401", async () => {
    const u = await userWith2fa("totp4@example.test");
    const again = await post("/2fa/setup", undefined, u.token);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("conflict");
    const v = await registerUser(t, "totp4b@example.test");
    expect((await post("/2fa/enable", { code: "123456" }, v.token)).status).toBe(400);
    expect((await post("/2fa/setup")).status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/2fa/status")).status).toBe(401);
  });
});

describe("login with 2FA", () => {
  test("login answers totp_required with a totp_token, and 2fa/verify with a valid code gives the session", async () => {
    const u = await userWith2fa("login1@example.test");
    const res = await login("login1@example.test");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ totp_required: true, totp_token: expect.any(String) });
    const v = await post("/2fa/verify", { totp_token: res.body.totp_token, code: codeAt(u.totp, t) });
    expect(v.status).toBe(200);
    expect(v.body).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_in: 900,
      token_type: "Bearer",
      user: expect.objectContaining({ id: u.id, email: "login1@example.test" }),
    });
    expect((await t.req("GET", "/api/v1/auth/me", { token: v.body.access_token })).status).toBe(200);
  });

  test("a code sent as a JSON number is read as the 6-digit code", async () => {
    const u = await userWith2fa("login1b@example.test");
    const { totp_token } = (await login("login1b@example.test")).body;
    expect((await post("/2fa/verify", { totp_token, code: Number(codeAt(u.totp, t)) })).status).toBe(200);
  });

  test("a totp_token is single use", async () => {
    const u = await userWith2fa("login2@example.test");
    const { totp_token } = (await login("login2@example.test")).body;
    expect((await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
    t.clock.advance(STEP);
    const again = await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe("invalid_token");
  });

  test("a wrong code is 401, and after 5 wrong codes the totp_token dies even for the right code", async () => {
    const u = await userWith2fa("login3@example.test");
    const { totp_token } = (await login("login3@example.test")).body;
    const wrong = codeAt(u.totp, t, 10);
    for (let i = 0; i < 5; i++) {
      const r = await post("/2fa/verify", { totp_token, code: wrong });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe("invalid_code");
    }
    const right = await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) });
    expect(right.status).toBe(401);
    expect(right.body.code).toBe("invalid_token");
  });

  test("four wrong codes still leave the token usable", async () => {
    const u = await userWith2fa("login3b@example.test");
    const { totp_token } = (await login("login3b@example.test")).body;
    for (let i = 0; i < 4; i++) expect((await post("/2fa/verify", { totp_token, code: "000000" })).status).toBe(401);
    expect((await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
  });

  test("a totp_token expires after 5 minutes", async () => {
    const u = await userWith2fa("login4@example.test");
    const { totp_token } = (await login("login4@example.test")).body;
    t.clock.advance(5 * 60_000 + 1000);
    const res = await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_token");
  });

  test("an unknown or missing totp_token is 401", async () => {
    expect((await post("/2fa/verify", { totp_token: "nope", code: "123456" })).status).toBe(401);
    expect((await post("/2fa/verify", { code: "123456" })).status).toBe(401);
  });

  test("a code from one step before or after is accepted, two steps away is not", async () => {
    const u = await userWith2fa("login5@example.test");
    let tok = (await login("login5@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: tok, code: codeAt(u.totp, t, -2) })).status).toBe(401);
    expect((await post("/2fa/verify", { totp_token: tok, code: codeAt(u.totp, t, 2) })).status).toBe(401);
    expect((await post("/2fa/verify", { totp_token: tok, code: codeAt(u.totp, t, 1) })).status).toBe(200);
    t.clock.advance(3 * STEP);
    tok = (await login("login5@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: tok, code: codeAt(u.totp, t, -1) })).status).toBe(200);
  });

  test("each step's code is used once in any order: the step before still works after this step's was used", async () => {
    const u = await userWith2fa("login6b@example.test");
    // userWith2fa used the code of the step before now to enable; now's and the next step's are fresh.
    const next = codeAt(u.totp, t, 1);
    let tok = (await login("login6b@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: tok, code: next })).status).toBe(200);
    tok = (await login("login6b@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: tok, code: codeAt(u.totp, t) })).status).toBe(200);
    tok = (await login("login6b@example.test")).body.totp_token;
    for (const code of [next, codeAt(u.totp, t), codeAt(u.totp, t, -1)]) expect((await post("/2fa/verify", { totp_token: tok, code })).status).toBe(401);
  });

  test("a code already used cannot be replayed, not even within its 30 seconds", async () => {
    const u = await userWith2fa("login6@example.test");
    const code = codeAt(u.totp, t);
    const first = (await login("login6@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: first, code })).status).toBe(200);
    const second = (await login("login6@example.test")).body.totp_token;
    const replay = await post("/2fa/verify", { totp_token: second, code });
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe("invalid_code");
  });

  test("each recovery code works once in place of a code", async () => {
    const u = await userWith2fa("login7@example.test");
    const first = (await login("login7@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: first, code: u.recovery[0] })).status).toBe(200);
    const second = (await login("login7@example.test")).body.totp_token;
    expect((await post("/2fa/verify", { totp_token: second, code: u.recovery[0] })).status).toBe(401);
    expect((await post("/2fa/verify", { totp_token: second, code: u.recovery[1].toUpperCase() })).status).toBe(200);
  });

  test("a magic link of a 2FA user also ends in totp_required", async () => {
    const u = await userWith2fa("login8@example.test");
    await post("/magic-link", { email: "login8@example.test" });
    await t.ctx.mailer.flush();
    const res = await post("/magic-link/verify", { token: smtp.lastToken("login8@example.test") });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ totp_required: true, totp_token: expect.any(String) });
    expect((await post("/2fa/verify", { totp_token: res.body.totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
  });

  test("with TOTP disabled in settings, setup is 403 method_disabled but a user with 2FA still needs it", async () => {
    const u = await userWith2fa("login9@example.test");
    const v = await registerUser(t, "login9b@example.test");
    await t.admin("PATCH", "/api/v1/admin/settings", { auth_totp_enabled: false });
    try {
      const setup = await post("/2fa/setup", undefined, v.token);
      expect(setup.status).toBe(403);
      expect(setup.body.code).toBe("method_disabled");
      const res = await login("login9@example.test");
      expect(res.body.totp_required).toBe(true);
      expect((await post("/2fa/verify", { totp_token: res.body.totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
    } finally {
      await t.admin("PATCH", "/api/v1/admin/settings", { auth_totp_enabled: true });
    }
  });
});

describe("2FA and the account lockout", () => {
  test("wrong codes count toward the lockout across totp_tokens; a new password login does not reset the count", async () => {
    const u = await userWith2fa("guess1@example.test");
    const wrong = codeAt(u.totp, t, 10);
    for (let round = 0; round < 2; round++) {
      const { totp_token } = (await login("guess1@example.test")).body;
      for (let i = 0; i < 5; i++) expect((await post("/2fa/verify", { totp_token, code: wrong })).status).toBe(401);
    }
    const locked = await login("guess1@example.test");
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("account_locked");
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    t.clock.advance(15 * 60_000);
    const { totp_token } = (await login("guess1@example.test")).body;
    expect((await post("/2fa/verify", { totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
  });

  test("a totp_token issued before a lockout cannot be used while it runs", async () => {
    const u = await userWith2fa("guess2@example.test");
    const early = (await login("guess2@example.test")).body.totp_token;
    for (let i = 0; i < 10; i++) await login("guess2@example.test", "wrong-password");
    const res = await post("/2fa/verify", { totp_token: early, code: codeAt(u.totp, t) });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe("account_locked");
  });

  test("wrong codes at 2fa/disable count too: the 11th try is 429 account_locked", async () => {
    const u = await userWith2fa("guess3@example.test");
    const wrong = codeAt(u.totp, t, 10);
    for (let i = 0; i < 10; i++) {
      expect((await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: wrong } })).status).toBe(400);
    }
    const res = await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: codeAt(u.totp, t) } });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe("account_locked");
  });
});

describe("2FA disable", () => {
  test("disable with a wrong code is 400 invalid_code; with a valid code 2FA is off and login gives a session", async () => {
    const u = await userWith2fa("off1@example.test");
    const wrong = await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: codeAt(u.totp, t, 7) } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe("invalid_code");
    const res = await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: codeAt(u.totp, t) } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ enabled: false });
    expect((await t.req("GET", "/api/v1/auth/2fa/status", { token: u.token })).body).toEqual({ enabled: false });
    const l = await login("off1@example.test");
    expect(l.body.access_token).toEqual(expect.any(String));
    expect(l.body.totp_required).toBeUndefined();
  });

  test("a recovery code also disables 2FA", async () => {
    const u = await userWith2fa("off2@example.test");
    const res = await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: u.recovery[9] } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ enabled: false });
  });

  test("disable when 2FA is off is 409, without a code 400", async () => {
    const u = await registerUser(t, "off3@example.test");
    expect((await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: { code: "123456" } })).status).toBe(409);
    expect((await t.req("DELETE", "/api/v1/auth/2fa/disable", { token: u.token, body: {} })).status).toBe(400);
  });
});

describe("2FA and password reset", () => {
  test("a password reset voids a pending 2FA login step opened with the old password", async () => {
    const u = await userWith2fa("reset2fa@example.test");
    const step = await login("reset2fa@example.test");
    expect(step.body.totp_required).toBe(true);
    await post("/forgot-password", { email: "reset2fa@example.test" });
    await t.ctx.mailer.flush();
    const reset = await post("/reset-password", { token: smtp.lastToken("reset2fa@example.test"), password: "new-password-9" });
    expect(reset.status).toBe(200);
    const res = await post("/2fa/verify", { totp_token: step.body.totp_token, code: codeAt(u.totp, t) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "invalid or expired totp_token", code: "invalid_token" });
    const fresh = await login("reset2fa@example.test", "new-password-9");
    expect(fresh.body.totp_required).toBe(true);
    expect((await post("/2fa/verify", { totp_token: fresh.body.totp_token, code: codeAt(u.totp, t) })).status).toBe(200);
  });
});
