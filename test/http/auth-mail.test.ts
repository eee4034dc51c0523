import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";
import { secondEngine } from "../helpers/engine.ts";
import { createMailTestApp } from "../helpers/smtp.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

const { t, smtp, close } = await createMailTestApp({ APP_URL: "https://app.example.test", MAIL_FROM: "auth@example.test" });
afterAll(close);

const MIN = 60_000;
const post = (path: string, body?: unknown, token?: string) => t.req("POST", `/api/v1/auth${path}`, { body, token });
/**
 * Registers a user and waits until its verification mail has arrived: each mail goes out on a connection
 * of its own, so a mail sent right after could otherwise arrive first and pass for the last one.
 */
async function register(email: string, password?: string) {
  const user = await registerUser(t, email, password);
  await t.ctx.mailer.flush();
  return user;
}
/** Waits until every queued mail reached the capture server, then returns the token of the last mail to `email`. */
async function tokenFor(email: string) {
  await t.ctx.mailer.flush();
  return smtp.lastToken(email);
}
async function mailsTo(email: string) {
  await t.ctx.mailer.flush();
  return smtp.to(email);
}

describe("mail templates and verification", () => {
  test("registration sends a verification mail with plain text, HTML, the app name and the verify-email link", async () => {
    await t.admin("PATCH", "/api/v1/admin/settings", { app_name: "Acme <Notes>" });
    await register("verify1@example.test");
    const mails = await mailsTo("verify1@example.test");
    expect(mails.length).toBe(1);
    const m = mails[0];
    expect(m.subject).toContain("Acme <Notes>");
    expect(m.from).toBe("auth@example.test");
    expect(m.raw).toMatch(/From: "?Acme <Notes>"? <auth@example.test>|From: =\?/);
    expect(m.text).toContain("Acme <Notes>");
    expect(m.text).toMatch(/https:\/\/app\.example\.test\/auth\/verify-email\?token=[A-Za-z0-9_-]{43}/);
    expect(m.html).toContain("Acme &lt;Notes&gt;");
    expect(m.html).toContain("https://app.example.test/auth/verify-email?token=");
    await t.admin("PATCH", "/api/v1/admin/settings", { app_name: "baas" });
  });

  test("verify-email with the mailed token marks the user verified and answers ok with the user", async () => {
    const u = await register("verify2@example.test");
    expect(u.body.user.is_verified).toBe(false);
    const token = await tokenFor("verify2@example.test");
    const res = await post("/verify-email", { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, user: expect.objectContaining({ id: u.id, email: "verify2@example.test", is_verified: true }) });
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).body.is_verified).toBe(true);
  });

  test("a verify-email token works only once", async () => {
    await register("verify3@example.test");
    const token = await tokenFor("verify3@example.test");
    expect((await post("/verify-email", { token })).status).toBe(200);
    const again = await post("/verify-email", { token });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: expect.any(String), code: "invalid_token" });
  });

  test("verify-email with an unknown, missing or malformed token is 400 invalid_token", async () => {
    for (const body of [{ token: "nope" }, {}, { token: 42 }, { token: "x".repeat(5000) }]) {
      const res = await post("/verify-email", body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_token");
    }
  });

  test("a verify-email token expires after 24 hours", async () => {
    await register("verify4@example.test");
    const token = await tokenFor("verify4@example.test");
    t.clock.advance(24 * 60 * MIN + 1000);
    expect((await post("/verify-email", { token })).status).toBe(400);
  });

  test("resend-verification sends a new link, 409 once verified, 401 without a token or with an API key", async () => {
    const u = await register("verify5@example.test");
    expect((await post("/resend-verification")).status).toBe(401);
    const res = await post("/resend-verification", undefined, u.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await mailsTo("verify5@example.test")).length).toBe(2);
    expect((await post("/verify-email", { token: await tokenFor("verify5@example.test") })).status).toBe(200);
    const again = await post("/resend-verification", undefined, u.token);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("conflict");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "k" } });
    const viaKey = await t.req("POST", "/api/v1/auth/resend-verification", { headers: { "x-api-key": key.body.key } });
    expect(viaKey.status).toBe(401);
  });

  test("resend-verification counts toward the mail limit of the address", async () => {
    const u = await register("verify6@example.test");
    for (let i = 0; i < 5; i++) expect((await post("/resend-verification", undefined, u.token)).status).toBe(200);
    const res = await post("/resend-verification", undefined, u.token);
    expect(res.status).toBe(429);
    expect(res.body.code).toBe("rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("magic link", () => {
  test("an unknown address gets ok and no mail", async () => {
    const res = await post("/magic-link", { email: "nobody@example.test" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await mailsTo("nobody@example.test")).length).toBe(0);
  });

  test("a known address gets a mail with the magic-link link, and verifying it returns a full session and marks the email verified", async () => {
    const u = await register("Magic1@Example.test");
    const res = await post("/magic-link", { email: "  MAGIC1@example.test " });
    expect(res.body).toEqual({ ok: true });
    const mails = await mailsTo("magic1@example.test");
    const m = mails[mails.length - 1];
    expect(m.text).toMatch(/https:\/\/app\.example\.test\/auth\/magic-link\?token=[A-Za-z0-9_-]{43}/);
    expect(m.html).toContain("/auth/magic-link?token=");
    const v = await post("/magic-link/verify", { token: smtp.lastToken("magic1@example.test") });
    expect(v.status).toBe(200);
    expect(v.body).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_in: 900,
      token_type: "Bearer",
      user: { id: u.id, email: "magic1@example.test", is_verified: true, roles: [], metadata: {}, created_at: expect.any(Number) },
    });
    expect((await t.req("GET", "/api/v1/auth/me", { token: v.body.access_token })).status).toBe(200);
  });

  test("a magic-link token works once and a second use is 401 invalid_token", async () => {
    await register("magic2@example.test");
    await post("/magic-link", { email: "magic2@example.test" });
    const token = await tokenFor("magic2@example.test");
    expect((await post("/magic-link/verify", { token })).status).toBe(200);
    const again = await post("/magic-link/verify", { token });
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ error: expect.any(String), code: "invalid_token" });
  });

  test("a magic-link token is valid for 30 minutes and no longer", async () => {
    await register("magic3@example.test");
    await post("/magic-link", { email: "magic3@example.test" });
    const early = await tokenFor("magic3@example.test");
    t.clock.advance(29 * MIN);
    expect((await post("/magic-link/verify", { token: early })).status).toBe(200);
    await post("/magic-link", { email: "magic3@example.test" });
    const late = await tokenFor("magic3@example.test");
    t.clock.advance(30 * MIN + 1000);
    expect((await post("/magic-link/verify", { token: late })).status).toBe(401);
  });

  test("a magic-link token cannot be used as a verify-email or reset token, nor the reverse", async () => {
    await register("magic4@example.test");
    await post("/magic-link", { email: "magic4@example.test" });
    const magic = await tokenFor("magic4@example.test");
    expect((await post("/verify-email", { token: magic })).status).toBe(400);
    expect((await post("/reset-password", { token: magic, password: "whatever123" })).status).toBe(400);
    expect((await post("/magic-link/verify", { token: magic })).status).toBe(200);
  });

  test("a bad email is 422 rule email, a non-object body 400", async () => {
    const res = await post("/magic-link", { email: "not-an-email" });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ field: "email", rule: "email" });
    expect((await post("/magic-link", [1, 2])).status).toBe(400);
    expect((await post("/magic-link/verify", "nope")).status).toBe(400);
  });
});

describe("mail rate limit", () => {
  test("the 6th mail in an hour to an unknown address is 429 with Retry-After, and the window frees up after an hour", async () => {
    const email = "limit-unknown@example.test";
    for (let i = 0; i < 5; i++) expect((await post("/magic-link", { email })).status).toBe(200);
    const sixth = await post("/magic-link", { email });
    expect(sixth.status).toBe(429);
    expect(sixth.body).toEqual({ error: expect.any(String), code: "rate_limited" });
    const retry = Number(sixth.headers.get("retry-after"));
    expect(retry).toBeGreaterThan(3500);
    expect(retry).toBeLessThanOrEqual(3600);
    t.clock.advance(retry * 1000);
    expect((await post("/magic-link", { email })).status).toBe(200);
    const rows = await t.db.all<{ sent_at: number }>("SELECT sent_at FROM _mail_log");
    expect(rows.every((r) => r.sent_at > t.clock.now() - 3_600_000)).toBe(true);
  });

  test("magic-link and forgot-password share one limit per address, whatever the spelling", async () => {
    await register("limit-shared@example.test");
    for (let i = 0; i < 3; i++) await post("/magic-link", { email: "limit-shared@example.test" });
    for (let i = 0; i < 2; i++) await post("/forgot-password", { email: "LIMIT-SHARED@example.test" });
    expect((await post("/forgot-password", { email: "limit-shared@example.test" })).status).toBe(429);
    expect((await post("/magic-link", { email: "limit-shared@example.test" })).status).toBe(429);
    expect((await mailsTo("limit-shared@example.test")).length).toBe(1 + 5);
    expect((await post("/magic-link", { email: "other-address@example.test" })).status).toBe(200);
  });

  test("the limit is kept in the database, so it survives a restart", async () => {
    const email = "limit-restart@example.test";
    for (let i = 0; i < 5; i++) await post("/forgot-password", { email });
    // A second app on the same data (the SQLite file of the data dir; on PostgreSQL, the same database).
    const t2 = createTestApp({ dir: t.dir, env: { SMTP_URL: smtp.url }, context: await secondEngine(t) });
    try {
      t2.clock.set(t.clock.now());
      const res = await t2.req("POST", "/api/v1/auth/forgot-password", { body: { email } });
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBeTruthy();
    } finally {
      await t2.close();
    }
  });
});

describe("password reset", () => {
  test("forgot-password always answers ok and mails the reset link only to an existing account", async () => {
    const none = await post("/forgot-password", { email: "reset-nobody@example.test" });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ ok: true });
    expect((await mailsTo("reset-nobody@example.test")).length).toBe(0);
    await register("reset1@example.test");
    expect((await post("/forgot-password", { email: "reset1@example.test" })).body).toEqual({ ok: true });
    const mails = await mailsTo("reset1@example.test");
    expect(mails[mails.length - 1].text).toMatch(/https:\/\/app\.example\.test\/auth\/reset-password\?token=[A-Za-z0-9_-]{43}/);
  });

  test("a login whose password check ends while a reset commits leaves no session behind", async () => {
    await register("race@example.test", "old-password-1");
    await post("/forgot-password", { email: "race@example.test" });
    const token = await tokenFor("race@example.test");
    // The reset runs to its end right after the login has read the user again (its last check outside the
    // session's transaction): the moment a parallel reset can land.
    const db = t.db as unknown as { get: (sql: string, params?: unknown[]) => Promise<unknown> };
    const get = db.get;
    let armed = true;
    db.get = async (sql, params) => {
      const row = await get.call(t.db, sql, params);
      if (armed && sql === "SELECT * FROM _users WHERE id = ?") {
        armed = false;
        expect((await post("/reset-password", { token, password: "new-password-2" })).status).toBe(200);
      }
      return row;
    };
    let login;
    try {
      login = await post("/login", { email: "race@example.test", password: "old-password-1" });
    } finally {
      db.get = get;
    }
    expect(armed).toBe(false);
    expect(login.status).toBe(401);
    expect(login.body.code).toBe("invalid_credentials");
    expect((await post("/login", { email: "race@example.test", password: "new-password-2" })).status).toBe(200);
  });

  test("reset-password sets the new password, revokes every session and API key with counts, and the token works once", async () => {
    const u = await register("reset2@example.test", "old-password-1");
    const second = await post("/login", { email: "reset2@example.test", password: "old-password-1" });
    await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "a" } });
    await post("/forgot-password", { email: "reset2@example.test" });
    const token = await tokenFor("reset2@example.test");
    const res = await post("/reset-password", { token, password: "new-password-2" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, sessions_revoked: 2, api_keys_revoked: 1 });
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/me", { token: second.body.access_token })).status).toBe(401);
    expect((await post("/refresh", { refresh_token: u.refresh })).status).toBe(401);
    expect((await post("/login", { email: "reset2@example.test", password: "old-password-1" })).status).toBe(401);
    expect((await post("/login", { email: "reset2@example.test", password: "new-password-2" })).status).toBe(200);
    const again = await post("/reset-password", { token, password: "third-password-3" });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe("invalid_token");
  });

  test("a reset token expires after one hour", async () => {
    await register("reset3@example.test");
    await post("/forgot-password", { email: "reset3@example.test" });
    const token = await tokenFor("reset3@example.test");
    t.clock.advance(60 * MIN + 1000);
    const res = await post("/reset-password", { token, password: "new-password-2" });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_token");
  });

  test("a too-short new password is 422 and does not use up the token", async () => {
    await register("reset4@example.test");
    await post("/forgot-password", { email: "reset4@example.test" });
    const token = await tokenFor("reset4@example.test");
    const short = await post("/reset-password", { token, password: "short" });
    expect(short.status).toBe(422);
    expect(short.body.errors[0]).toMatchObject({ field: "password", rule: "min" });
    expect((await post("/reset-password", { token, password: "long-enough-1" })).status).toBe(200);
  });

  test("using one reset link voids the other outstanding reset links of the user", async () => {
    await register("reset5@example.test");
    await post("/forgot-password", { email: "reset5@example.test" });
    const first = await tokenFor("reset5@example.test");
    await post("/forgot-password", { email: "reset5@example.test" });
    const second = await tokenFor("reset5@example.test");
    expect(first).not.toBe(second);
    expect((await post("/reset-password", { token: second, password: "long-enough-1" })).status).toBe(200);
    expect((await post("/reset-password", { token: first, password: "long-enough-2" })).status).toBe(400);
  });
});

describe("secrets at rest", () => {
  test("mail tokens are stored only as hashes and never written to the log", async () => {
    await register("secret1@example.test");
    await post("/magic-link", { email: "secret1@example.test" });
    const token = await tokenFor("secret1@example.test");
    const rows = await t.db.all<{ hash: string }>("SELECT hash FROM _tokens");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.hash === token || r.hash.includes(token))).toBe(false);
    expect(JSON.stringify(t.log.lines)).not.toContain(token);
  });
});
