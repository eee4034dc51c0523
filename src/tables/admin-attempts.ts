import type { Engine } from "../db/engine.ts";

// The `_admin_attempts` table (wrong guesses at the admin secret, per client address): its SQL is written here.

/** How many guesses `ip` made after `since`, and when the first of them was. */
export async function recentAdminAttempts(db: Engine, ip: string, since: number): Promise<{ n: number; first: number | null }> {
  return (await db.get<{ n: number; first: number | null }>("SELECT COUNT(*) AS n, MIN(at) AS first FROM _admin_attempts WHERE ip = ? AND at > ?", [ip, since]))!;
}

/** Forgets the guesses made at or before `since`. */
export async function pruneAdminAttempts(db: Engine, since: number): Promise<void> {
  await db.run("DELETE FROM _admin_attempts WHERE at <= ?", [since]);
}

/** Notes a wrong guess by `ip` at `now`. */
export async function noteAdminAttempt(db: Engine, ip: string, now: number): Promise<void> {
  await db.run("INSERT INTO _admin_attempts (ip, at) VALUES (?, ?)", [ip, now]);
}
