import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { matchOAuthUser } from "../../src/auth/oauth/matching.ts";
import { normalizeStoredEmails } from "../../src/users/stored-emails.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// Emails are NFC-normalised (CONTRACT §8c): composed and decomposed `josé@x.com` are one address, one
// account, one lockout count and one mail limit. Invisible and control characters are 422 rule `email`.

setDefaultTimeout(30_000);

const COMPOSED = "jos\u00e9@example.com";
const DECOMPOSED = "jose\u0301@example.com";
const PASSWORD = "password123";

let t: TestApp;
beforeAll(async () => {
  t = createTestApp({ env: { LOCKOUT_MAX_ATTEMPTS: "4" } });
  await t.ready;
});
afterAll(() => t.close());

const post = (path: string, body: unknown) => t.req("POST", `/api/v1${path}`, { body });
const emailError = { errors: [{ field: "email", rule: "email", message: '"email" must be a valid email address.' }] };
const mailsTo = (email: string) => t.log.lines.filter((l) => l.msg.startsWith("mail (") && l.fields?.to === email);

describe("one address, one account", () => {
  test("an account registered decomposed is the composed address: stored NFC, 409 for the other form, login with either", async () => {
    const reg = await post("/auth/register", { email: DECOMPOSED.toUpperCase(), password: PASSWORD });
    expect(reg.status).toBe(201);
    expect(reg.body.user.email).toBe(COMPOSED);
    for (const email of [COMPOSED, DECOMPOSED, ` ${COMPOSED.toUpperCase()} `])
      expect((await post("/auth/register", { email, password: PASSWORD })).body).toEqual({ error: "a user with this email already exists", code: "conflict" });
    for (const email of [COMPOSED, DECOMPOSED, "JOSE\u0301@EXAMPLE.COM"]) expect((await post("/auth/login", { email, password: PASSWORD })).status).toBe(200);
    // The admin API's lookups and search take either form too.
    expect((await t.admin("GET", `/api/v1/admin/users/${encodeURIComponent(DECOMPOSED)}`)).body.id).toBe(reg.body.user.id);
    expect((await t.admin("GET", `/api/v1/admin/users?search=${encodeURIComponent("jose\u0301")}`)).body.total).toBe(1);
    const made = await t.admin("POST", "/api/v1/admin/users", { email: "zoe\u0308@example.com" });
    expect(made.body.email).toBe("zo\u00eb@example.com");
    expect((await t.admin("POST", "/api/v1/admin/users", { email: "zo\u00eb@example.com" })).status).toBe(409);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${made.body.id}`, { email: DECOMPOSED })).status).toBe(409);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${made.body.id}`, { email: "re\u0301my@example.com" })).body.email).toBe("r\u00e9my@example.com");
  });

  test("the lockout counts both forms as one address", async () => {
    await post("/auth/register", { email: "mu\u0308ller@example.com", password: PASSWORD });
    for (const email of ["m\u00fcller@example.com", "mu\u0308ller@example.com", "M\u00dcLLER@example.com", "MU\u0308LLER@example.com"])
      expect((await post("/auth/login", { email, password: "wrong-password" })).status).toBe(401);
    const locked = await post("/auth/login", { email: "m\u00fcller@example.com", password: PASSWORD });
    expect([locked.status, locked.body.code]).toEqual([429, "account_locked"]);
  });

  test("the mail limit counts both forms as one address, and a link goes to the account's address", async () => {
    const [composed, decomposed] = ["fran\u00e7ois@example.com", "franc\u0327ois@example.com"];
    expect((await t.admin("POST", "/api/v1/admin/users", { email: decomposed })).status).toBe(201);
    for (let i = 0; i < 5; i++) expect((await post("/auth/forgot-password", { email: i % 2 ? composed : decomposed })).status).toBe(200);
    await t.ctx.mailer.flush();
    expect(mailsTo(composed).filter((m) => /reset/i.test(String(m.fields?.subject))).length).toBe(5);
    const limited = await post("/auth/magic-link", { email: decomposed });
    expect([limited.status, limited.body.code]).toEqual([429, "rate_limited"]);
  });

  test("an OAuth login with a verified email in the other form finds the account", async () => {
    const [composed, decomposed] = ["ren\u00e9e@example.com", "rene\u0301e@example.com"];
    const made = await t.admin("POST", "/api/v1/admin/users", { email: composed, is_verified: true });
    const user = await matchOAuthUser(t.ctx, "oidc", { id: "sub-1", email: decomposed, emailVerified: true, name: null, avatarUrl: null });
    expect([user.id, user.email]).toEqual([made.body.id, composed]);
    expect((await t.admin("GET", "/api/v1/admin/users?search=ren")).body.total).toBe(1);
  });
});

describe("invisible and control characters", () => {
  const INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\u202e", "\u2066", "\u061c", "\ufeffx", "\u0000", "\u0007", "\u001b", "\u0085", "\u2028", "\u180e", "\u3164", "\ufe0f", "\u034f", "\u{e0041}"];

  test("register, admin create and update, magic link and forgot-password answer 422 rule email", async () => {
    for (const c of INVISIBLE) {
      const email = `ada${c}@example.com`;
      const reg = await post("/auth/register", { email, password: PASSWORD });
      expect([JSON.stringify(c), reg.status, reg.body]).toEqual([JSON.stringify(c), 422, emailError]);
      expect([JSON.stringify(c), (await t.admin("POST", "/api/v1/admin/users", { email })).status]).toEqual([JSON.stringify(c), 422]);
      expect([JSON.stringify(c), (await post("/auth/magic-link", { email })).body]).toEqual([JSON.stringify(c), emailError]);
      expect([JSON.stringify(c), (await post("/auth/forgot-password", { email })).status]).toEqual([JSON.stringify(c), 422]);
    }
    const ada = await t.admin("POST", "/api/v1/admin/users", { email: "ada@example.com", password: PASSWORD });
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ada.body.id}`, { email: "ad\u200ba@example.com" })).body).toEqual(emailError);
    // A login with such an address is a wrong login, as for any malformed email.
    expect((await post("/auth/login", { email: "ada\u200b@example.com", password: PASSWORD })).body.code).toBe("invalid_credentials");
    expect((await post("/auth/login", { email: "ada@example.com", password: PASSWORD })).status).toBe(200);
  });

  test("visible non-ASCII addresses stay welcome", async () => {
    for (const email of ["\u00fcber@example.com", "\u5f20\u4f1f@example.cn", "\u0434\u0438\u043c\u0430@example.ru"]) {
      const res = await post("/auth/register", { email, password: PASSWORD });
      expect([email, res.status]).toEqual([email, 201]);
    }
  });
});

describe("emails stored before normalisation", () => {
  test("are brought to their NFC form once, so their owners' logins match; a form another account holds stays", async () => {
    const insert = (id: string, email: string) =>
      t.db.run("INSERT INTO _users (id, email, password_hash, roles, metadata, created_at, updated_at) VALUES (?, ?, ?, '[]', '{}', 1, 1)", [id, email, null]);
    await insert("00000000000000000000000001", "ana\u0301@example.com");
    await insert("00000000000000000000000002", "be\u0301a@example.com");
    await insert("00000000000000000000000003", "b\u00e9a@example.com");
    await t.db.run("DELETE FROM _meta WHERE key = 'emails_nfc'");
    await normalizeStoredEmails(t.ctx);
    const emails = await t.db.all<{ id: string; email: string }>("SELECT id, email FROM _users WHERE id LIKE '0000000000000000000000000%' ORDER BY id");
    expect(emails).toEqual([
      { id: "00000000000000000000000001", email: "an\u00e1@example.com" },
      { id: "00000000000000000000000002", email: "be\u0301a@example.com" },
      { id: "00000000000000000000000003", email: "b\u00e9a@example.com" },
    ]);
    expect(t.log.lines.filter((l) => l.level === "warn" && l.fields?.user_id === "00000000000000000000000002").length).toBe(1);
    expect((await t.admin("GET", `/api/v1/admin/users/${encodeURIComponent("ana\u0301@example.com")}`)).body.id).toBe("00000000000000000000000001");
    // Done once: a row written the old way afterwards is not looked at again.
    await insert("00000000000000000000000004", "ine\u0301s@example.com");
    await normalizeStoredEmails(t.ctx);
    expect((await t.db.get<{ email: string }>("SELECT email FROM _users WHERE id = '00000000000000000000000004'"))!.email).toBe("ine\u0301s@example.com");
  });
});
