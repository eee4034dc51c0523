import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createServer } from "node:net";
import { createTestApp, registerUser } from "../helpers/app.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

// A port that refuses connections: mail delivery must fail without failing the request.
const closedPort = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const port = (s.address() as { port: number }).port;
    s.close(() => resolve(port));
  });
});
const t = createTestApp({ env: { LOCKOUT_MAX_ATTEMPTS: "3", LOCKOUT_DURATION_MS: "60000", SMTP_URL: `smtp://127.0.0.1:${closedPort}` } });
afterAll(() => t.close());

const login = (email: string, password: string) => t.req("POST", "/api/v1/auth/login", { body: { email, password } });

describe("account lockout", () => {
  test("the 3rd failed login locks the account: 429 account_locked with Retry-After, even with the right password", async () => {
    await registerUser(t, "lock1@example.test", "right-password");
    for (let i = 0; i < 3; i++) {
      const r = await login("lock1@example.test", "wrong-password");
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: "invalid email or password", code: "invalid_credentials" });
    }
    const locked = await login("lock1@example.test", "right-password");
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ error: expect.any(String), code: "account_locked" });
    expect(locked.headers.get("retry-after")).toBe("60");
    t.clock.advance(20_000);
    expect((await login("lock1@example.test", "right-password")).headers.get("retry-after")).toBe("40");
  });

  test("the lock ends after LOCKOUT_DURATION_MS and the right password works again", async () => {
    await registerUser(t, "lock2@example.test", "right-password");
    for (let i = 0; i < 3; i++) await login("lock2@example.test", "wrong-password");
    t.clock.advance(59_000);
    expect((await login("lock2@example.test", "right-password")).status).toBe(429);
    t.clock.advance(1_000);
    expect((await login("lock2@example.test", "right-password")).status).toBe(200);
  });

  test("a successful login resets the count of failures", async () => {
    await registerUser(t, "lock3@example.test", "right-password");
    for (let i = 0; i < 2; i++) await login("lock3@example.test", "wrong-password");
    expect((await login("lock3@example.test", "right-password")).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await login("lock3@example.test", "wrong-password")).status).toBe(401);
    expect((await login("lock3@example.test", "right-password")).status).toBe(200);
  });

  test("an unknown email is the same 401, and locks after the same number of failures as an account", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await login("ghost@example.test", "whatever-password");
      expect(r.status).toBe(401);
      expect(r.body.code).toBe("invalid_credentials");
    }
    const locked = await login("ghost@example.test", "whatever-password");
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("account_locked");
  });

  test("an admin unlock clears the lockout at once", async () => {
    const u = await registerUser(t, "lock4@example.test", "right-password");
    for (let i = 0; i < 3; i++) await login("lock4@example.test", "wrong-password");
    expect((await login("lock4@example.test", "right-password")).status).toBe(429);
    const res = await t.admin("POST", `/api/v1/admin/users/${u.id}/unlock`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: u.id, email: "lock4@example.test" });
    expect((await login("lock4@example.test", "right-password")).status).toBe(200);
  });
});

describe("mail delivery failures", () => {
  test("registration succeeds although the SMTP server is unreachable, and the failure is logged without the token", async () => {
    const u = await registerUser(t, "nomail@example.test");
    expect(u.body.user.email).toBe("nomail@example.test");
    await t.ctx.mailer.flush();
    const failure = t.log.lines.find((l) => l.msg === "mail delivery failed" && l.fields?.to === "nomail@example.test");
    expect(failure?.fields?.error).toEqual(expect.any(String));
    expect(JSON.stringify(t.log.lines)).not.toMatch(/token=/);
  });
});
