import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";

/**
 * Account lockout (CONTRACT §7, §8c). Every password or 2FA-code guess takes a slot for its
 * normalised email BEFORE the slow check runs; the LOCKOUT_MAX_ATTEMPTS-th slot starts the lock,
 * and while it runs no slot is handed out. So however requests are timed, at most
 * LOCKOUT_MAX_ATTEMPTS guesses are checked per lock window, and a failure never ends a lock.
 * Counted per email whether or not an account exists, so a 429 does not reveal which do.
 * A count with no new attempt for LOCKOUT_DURATION_MS is forgotten; a completed login clears it.
 */

// One statement, so the count and the lock are decided inside the database: two processes (or
// two requests racing past a slow hash) can never both take the last slot.
// ?1 email, ?2 now, ?3 max attempts, ?4 lock duration (cast, so PostgreSQL knows their type). SET
// expressions see the row as it was.
const TAKE_SLOT = `
  INSERT INTO _login_attempts (email, attempts, last_at, locked_until)
  VALUES (?1, 1, CAST(?2 AS BIGINT), CASE WHEN 1 >= CAST(?3 AS BIGINT) THEN CAST(?2 AS BIGINT) + CAST(?4 AS BIGINT) END)
  ON CONFLICT (email) DO UPDATE SET
    attempts = CASE WHEN COALESCE(_login_attempts.locked_until, _login_attempts.last_at + CAST(?4 AS BIGINT)) <= CAST(?2 AS BIGINT) THEN 1 ELSE _login_attempts.attempts + 1 END,
    locked_until = CASE WHEN (CASE WHEN COALESCE(_login_attempts.locked_until, _login_attempts.last_at + CAST(?4 AS BIGINT)) <= CAST(?2 AS BIGINT) THEN 1 ELSE _login_attempts.attempts + 1 END) >= CAST(?3 AS BIGINT)
                        THEN CAST(?2 AS BIGINT) + CAST(?4 AS BIGINT) END,
    last_at = CAST(?2 AS BIGINT)
  WHERE _login_attempts.locked_until IS NULL OR _login_attempts.locked_until <= CAST(?2 AS BIGINT)
  RETURNING attempts`;

/** 429 `account_locked` with Retry-After (seconds). */
function accountLocked(retryAfterSeconds: number): AppError {
  return new AppError(429, "account_locked", "too many failed logins; the account is locked for now", {}, {
    "Retry-After": String(retryAfterSeconds),
  });
}

/**
 * Takes one guess slot for `email` (already normalised), or throws 429 `account_locked` while a
 * lock runs. Call it before checking the password or code; call `clearLoginAttempts` when the
 * login completes. A wrong guess needs no further call: its slot stays taken.
 */
export async function takeLoginAttempt(ctx: AppContext, email: string): Promise<void> {
  const now = ctx.clock.now();
  const { lockoutMaxAttempts, lockoutDurationMs } = ctx.config;
  // Forgotten counts and ended locks are dropped as they go, so unknown emails cannot grow the table without bound.
  await ctx.db.run("DELETE FROM _login_attempts WHERE last_at <= ? AND (locked_until IS NULL OR locked_until <= ?)", [now - lockoutDurationMs, now]);
  const taken = await ctx.db.get(TAKE_SLOT, [email, now, lockoutMaxAttempts, lockoutDurationMs]);
  if (taken) return;
  const row = await ctx.db.get<{ locked_until: number | null }>("SELECT locked_until FROM _login_attempts WHERE email = ?", [email]);
  throw accountLocked(Math.max(1, Math.ceil(((row?.locked_until ?? now) - now) / 1000)));
}

/** Forgets the failures of `email` and ends its lock: a completed login, a password reset, an admin unlock. */
export async function clearLoginAttempts(ctx: AppContext, email: string): Promise<void> {
  await ctx.db.run("DELETE FROM _login_attempts WHERE email = ?", [email]);
}

/**
 * Gives back a slot whose guess was right but did not complete a login (a right password of a
 * 2FA user): a right password is no failure. A lock that slot started ends with it.
 */
export async function releaseLoginAttempt(ctx: AppContext, email: string): Promise<void> {
  await ctx.db.run(`UPDATE _login_attempts SET attempts = attempts - 1,
         locked_until = CASE WHEN attempts - 1 >= ?2 THEN locked_until END
       WHERE email = ?1 AND attempts > 0`, [email, ctx.config.lockoutMaxAttempts]);
}

/** Unix ms until which logins of `email` are refused, or null when no lock runs. */
export async function lockedUntil(ctx: AppContext, email: string): Promise<number | null> {
  const row = await ctx.db.get<{ locked_until: number | null }>("SELECT locked_until FROM _login_attempts WHERE email = ? AND locked_until > ?", [email, ctx.clock.now()]);
  return row?.locked_until ?? null;
}
