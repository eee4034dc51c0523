import type { Engine } from "../db/engine.ts";

// The `_login_attempts` table (password and 2FA-code guesses per normalised email, and their locks): its SQL is
// written here. The rules it keeps are explained in auth/lockout.ts.

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

/** Forgets counts with no attempt since `forgetBefore` and no lock running at `now`. */
export async function pruneLoginAttempts(db: Engine, forgetBefore: number, now: number): Promise<void> {
  await db.run("DELETE FROM _login_attempts WHERE last_at <= ? AND (locked_until IS NULL OR locked_until <= ?)", [forgetBefore, now]);
}

/** Takes one guess slot for `email`; false while a lock runs (no slot handed out). The `max`-th slot starts a lock of `lockMs`. */
export async function takeLoginSlot(db: Engine, email: string, now: number, max: number, lockMs: number): Promise<boolean> {
  return !!(await db.get(TAKE_SLOT, [email, now, max, lockMs]));
}

/** When the lock of `email` ends (null: no lock stored). */
export async function lockOf(db: Engine, email: string): Promise<number | null> {
  return (await db.get<{ locked_until: number | null }>("SELECT locked_until FROM _login_attempts WHERE email = ?", [email]))?.locked_until ?? null;
}

/** When the lock of `email` running at `now` ends, or null when none runs. */
export async function runningLockOf(db: Engine, email: string, now: number): Promise<number | null> {
  return (await db.get<{ locked_until: number | null }>("SELECT locked_until FROM _login_attempts WHERE email = ? AND locked_until > ?", [email, now]))?.locked_until ?? null;
}

/** Forgets the count and lock of `email`. */
export async function clearLoginRow(db: Engine, email: string): Promise<void> {
  await db.run("DELETE FROM _login_attempts WHERE email = ?", [email]);
}

/** Gives back one slot of `email`; a lock it started (the count falls below `max`) ends with it. */
export async function releaseLoginSlot(db: Engine, email: string, max: number): Promise<void> {
  await db.run(`UPDATE _login_attempts SET attempts = attempts - 1,
         locked_until = CASE WHEN attempts - 1 >= ?2 THEN locked_until END
       WHERE email = ?1 AND attempts > 0`, [email, max]);
}
