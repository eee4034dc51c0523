import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";
import { clearLoginRow, lockOf, pruneLoginAttempts, releaseLoginSlot, runningLockOf, takeLoginSlot } from "../tables/login-attempts.ts";

/**
 * Account lockout (CONTRACT §7, §8c). Every password or 2FA-code guess takes a slot for its
 * normalised email BEFORE the slow check runs; the LOCKOUT_MAX_ATTEMPTS-th slot starts the lock,
 * and while it runs no slot is handed out. So however requests are timed, at most
 * LOCKOUT_MAX_ATTEMPTS guesses are checked per lock window, and a failure never ends a lock.
 * Counted per email whether or not an account exists, so a 429 does not reveal which do.
 * A count with no new attempt for LOCKOUT_DURATION_MS is forgotten; a completed login clears it.
 */

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
  await pruneLoginAttempts(ctx.db, now - lockoutDurationMs, now);
  // One statement decides the count and the lock inside the database (see tables/login-attempts.ts).
  if (await takeLoginSlot(ctx.db, email, now, lockoutMaxAttempts, lockoutDurationMs)) return;
  const until = (await lockOf(ctx.db, email)) ?? now;
  throw accountLocked(Math.max(1, Math.ceil((until - now) / 1000)));
}

/** Forgets the failures of `email` and ends its lock: a completed login, a password reset, an admin unlock. */
export async function clearLoginAttempts(ctx: AppContext, email: string): Promise<void> {
  await clearLoginRow(ctx.db, email);
}

/**
 * Gives back a slot whose guess was right but did not complete a login (a right password of a
 * 2FA user): a right password is no failure. A lock that slot started ends with it.
 */
export async function releaseLoginAttempt(ctx: AppContext, email: string): Promise<void> {
  await releaseLoginSlot(ctx.db, email, ctx.config.lockoutMaxAttempts);
}

/** Unix ms until which logins of `email` are refused, or null when no lock runs. */
export async function lockedUntil(ctx: AppContext, email: string): Promise<number | null> {
  return await runningLockOf(ctx.db, email, ctx.clock.now());
}
