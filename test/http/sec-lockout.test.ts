import { afterAll, describe, expect, setDefaultTimeout, spyOn, test } from "bun:test";
import { TOTP, URI } from "otpauth";
import { createTestApp, registerUser } from "../helpers/app.ts";

// Password hashing (argon2id) is slow on a loaded machine.
setDefaultTimeout(60_000);

const MAX = 5;
const t = createTestApp({ env: { LOCKOUT_MAX_ATTEMPTS: String(MAX), LOCKOUT_DURATION_MS: "60000" } });
afterAll(() => t.close());

const login = (email: string, password: string) => t.req("POST", "/api/v1/auth/login", { body: { email, password } });

/** Runs `fn` while counting the password hash checks (argon2id verifications) it causes. */
async function countingHashChecks<T>(fn: () => Promise<T>): Promise<{ result: T; checks: number }> {
  const spy = spyOn(Bun.password, "verify");
  try {
    const result = await fn();
    return { result, checks: spy.mock.calls.length };
  } finally {
    spy.mockRestore();
  }
}

describe("lockout under concurrent guesses", () => {
  test("50 concurrent wrong logins check at most LOCKOUT_MAX_ATTEMPTS passwords, and the right password then gets 429", async () => {
    await registerUser(t, "burst@example.test", "right-password");
    const { result, checks } = await countingHashChecks(() =>
      Promise.all(Array.from({ length: 50 }, () => login("burst@example.test", "wrong-password"))),
    );
    expect(checks).toBe(MAX);
    const statuses = result.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(50 - MAX);
    for (const r of result.filter((r) => r.status === 429)) {
      expect(r.body).toEqual({ error: expect.any(String), code: "account_locked" });
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    const right = await countingHashChecks(() => login("burst@example.test", "right-password"));
    expect(right.result.status).toBe(429);
    expect(right.result.body.code).toBe("account_locked");
    expect(right.checks).toBe(0);
  });

  test("bursts that alternate with waits never add up to more than LOCKOUT_MAX_ATTEMPTS checks in a lock window", async () => {
    await registerUser(t, "waves@example.test", "right-password");
    const { checks } = await countingHashChecks(async () => {
      for (let wave = 0; wave < 4; wave++) {
        await Promise.all(Array.from({ length: 4 }, () => login("waves@example.test", "wrong-password")));
        t.clock.advance(10_000);
      }
    });
    expect(checks).toBe(MAX);
    // The 5th try (second wave, at 10 s) started the 60 s lock; now, at 40 s, the refused tries have not extended it.
    const locked = await login("waves@example.test", "right-password");
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe("30");
    t.clock.advance(60_000);
    expect((await login("waves@example.test", "right-password")).status).toBe(200);
  });
});

describe("lockout does not reveal which emails exist", () => {
  test("an unknown email and a known one answer the same sequence: 401 × LOCKOUT_MAX_ATTEMPTS, then 429 with Retry-After", async () => {
    await registerUser(t, "known@example.test", "right-password");
    for (const email of ["known@example.test", "nobody-here@example.test"]) {
      const seen: number[] = [];
      for (let i = 0; i <= MAX; i++) seen.push((await login(email, "wrong-password")).status);
      expect(seen).toEqual([...Array(MAX).fill(401), 429]);
      const last = await login(email, "wrong-password");
      expect(last.body).toEqual({ error: expect.any(String), code: "account_locked" });
      expect(last.headers.get("retry-after")).toBe("60");
    }
  });

  test("the count is per normalised email: case and spaces do not give fresh tries", async () => {
    const variants = ["Mixed@Example.test", " mixed@example.test", "MIXED@EXAMPLE.TEST ", "mixed@example.test", "mIxed@example.TEST"];
    for (const v of variants) expect((await login(v, "wrong-password")).status).toBe(401);
    expect((await login("mixed@example.test", "wrong-password")).status).toBe(429);
  });
});

describe("one counter for passwords and 2FA codes", () => {
  test("wrong passwords and wrong codes share the count; a right password is not counted as a failure", async () => {
    const u = await registerUser(t, "twofa@example.test", "right-password");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { is_verified: true })).status).toBe(200);
    const setup = await t.req("POST", "/api/v1/auth/2fa/setup", { token: u.token });
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    const enable = await t.req("POST", "/api/v1/auth/2fa/enable", { token: u.token, body: { code: totp.generate({ timestamp: t.clock.now() }) } });
    expect(enable.status).toBe(200);
    t.clock.advance(30_000);
    for (let i = 0; i < 2; i++) expect((await login("twofa@example.test", "wrong-password")).status).toBe(401);
    const step = await login("twofa@example.test", "right-password");
    expect(step.body).toEqual({ totp_required: true, totp_token: expect.any(String) });
    const wrongCode = totp.generate({ timestamp: t.clock.now() + 10 * 30_000 });
    const verify = (code: string) => t.req("POST", "/api/v1/auth/2fa/verify", { body: { totp_token: step.body.totp_token, code } });
    // 2 wrong passwords + 3 wrong codes = 5 failures: the lock starts with the 5th.
    for (let i = 0; i < 3; i++) expect((await verify(wrongCode)).status).toBe(401);
    const locked = await verify(totp.generate({ timestamp: t.clock.now() }));
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("account_locked");
  });
});
