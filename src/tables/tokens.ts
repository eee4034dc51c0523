import type { Engine } from "../db/engine.ts";

// The `_tokens` table (single-use tokens: mail links and the second login step, kept hashed): the SQL that
// reads or writes it is written here (and only here).

/** The kinds of token stored. */
export type TokenKind = "magic_link" | "verify_email" | "reset_password" | "totp_login" | "totp_step";

/** Stores a token by its hash. */
export async function insertToken(db: Engine, t: { hash: string; kind: TokenKind; userId: string; now: number; expiresAt: number }): Promise<void> {
  await db.run("INSERT INTO _tokens (hash, kind, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", [t.hash, t.kind, t.userId, t.now, t.expiresAt]);
}

/** Uses up the unused, unexpired token of that hash and kind; its user id, or null. One statement: two requests cannot both use it. */
export async function consumeToken(db: Engine, hash: string, kind: TokenKind, now: number): Promise<string | null> {
  const row = await db.get<{ user_id: string }>("UPDATE _tokens SET used_at = ? WHERE hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id", [now, hash, kind, now]);
  return row ? row.user_id : null;
}

/** Uses up every unused token of these kinds of a user (links mailed before a change that must void them). */
export async function useUserTokens(db: Engine, userId: string, kinds: readonly TokenKind[], now: number): Promise<void> {
  await db.run(`UPDATE _tokens SET used_at = ? WHERE user_id = ? AND kind IN (${kinds.map(() => "?").join(", ")}) AND used_at IS NULL`, [now, userId, ...kinds]);
}

/** The live second-login-step token of that hash: its user and the wrong codes tried with it; null when none. */
export async function liveTotpToken(db: Engine, hash: string, now: number): Promise<{ user_id: string; attempts: number } | null> {
  return await db.get<{ user_id: string; attempts: number }>("SELECT user_id, attempts FROM _tokens WHERE hash = ? AND kind = 'totp_login' AND used_at IS NULL AND expires_at > ?", [hash, now]);
}

/** Counts a wrong code tried with a token; the token is used up once `attempts` reaches `max`. */
export async function countTokenAttempt(db: Engine, hash: string, attempts: number, max: number, now: number): Promise<void> {
  await db.run("UPDATE _tokens SET attempts = ?, used_at = CASE WHEN CAST(? AS BIGINT) >= CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE used_at END WHERE hash = ?", [attempts, attempts, max, now, hash]);
}

/** Uses up the token of that hash. */
export async function useToken(db: Engine, hash: string, now: number): Promise<void> {
  await db.run("UPDATE _tokens SET used_at = ? WHERE hash = ?", [now, hash]);
}

/**
 * Uses up the TOTP time step `step` of a user's secret (its row lasts until `expiresAt`, when no code of it is
 * accepted any more): false when it was used already, a replay. One statement decides, so two requests with
 * one code cannot both pass; the user's steps past use are forgotten first.
 */
export async function useTotpStep(db: Engine, userId: string, step: number, expiresAt: number, now: number): Promise<boolean> {
  await db.run("DELETE FROM _tokens WHERE user_id = ? AND kind = 'totp_step' AND expires_at <= ?", [userId, now]);
  const done = await db.run("INSERT INTO _tokens (hash, kind, user_id, created_at, expires_at) VALUES (?, 'totp_step', ?, ?, ?) ON CONFLICT (hash) DO NOTHING", [
    `totp_step:${userId}:${step}`,
    userId,
    now,
    expiresAt,
  ]);
  return done.changes > 0;
}

/** Forgets the used TOTP steps of a user (a new secret's codes are new). */
export async function forgetTotpSteps(db: Engine, userId: string): Promise<void> {
  await db.run("DELETE FROM _tokens WHERE user_id = ? AND kind = 'totp_step'", [userId]);
}
