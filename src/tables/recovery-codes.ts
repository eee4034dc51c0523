import type { Engine } from "../db/engine.ts";

// The `_recovery_codes` table (2FA recovery codes, kept hashed): the SQL that reads or writes it is written here.

/** Uses up a user's unused code of that hash; false when there is none. One statement: a code works once. */
export async function useRecoveryCode(db: Engine, userId: string, hash: string, now: number): Promise<boolean> {
  return (await db.run("UPDATE _recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL", [now, userId, hash])).changes > 0;
}

/** Forgets every code of a user. */
export async function deleteRecoveryCodes(db: Engine, userId: string): Promise<void> {
  await db.run("DELETE FROM _recovery_codes WHERE user_id = ?", [userId]);
}

/** Stores one code of a user by its hash (a repeat of a hash is kept once). */
export async function insertRecoveryCode(db: Engine, userId: string, hash: string): Promise<void> {
  await db.run("INSERT INTO _recovery_codes (user_id, code_hash) VALUES (?, ?) ON CONFLICT DO NOTHING", [userId, hash]);
}
