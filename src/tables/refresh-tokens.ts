import type { Engine } from "../db/engine.ts";

// The `_refresh_tokens` table: the SQL that reads or writes it is written here (and only here).

/** Stores a refresh token by its hash. */
export async function insertRefreshToken(db: Engine, hash: string, sessionId: string, now: number, expiresAt: number): Promise<void> {
  await db.run("INSERT INTO _refresh_tokens (hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)", [hash, sessionId, now, expiresAt]);
}

/** The refresh token of that hash, or null. */
export async function refreshTokenByHash(db: Engine, hash: string): Promise<{ session_id: string; expires_at: number; used_at: number | null } | null> {
  return await db.get<{ session_id: string; expires_at: number; used_at: number | null }>("SELECT session_id, expires_at, used_at FROM _refresh_tokens WHERE hash = ?", [hash]);
}

/** Marks a refresh token used (it is good for one refresh). */
export async function markRefreshTokenUsed(db: Engine, hash: string, now: number): Promise<void> {
  await db.run("UPDATE _refresh_tokens SET used_at = ? WHERE hash = ?", [now, hash]);
}

/**
 * Deletes the used refresh tokens of a session but its `keep` most recently used: a session refreshed every few
 * minutes for a month (or in a loop) no longer leaves a row per refresh for ever. One of those kept, presented
 * again, still revokes the session (a stolen token); an older one is only unknown (401).
 */
export async function forgetUsedRefreshTokens(db: Engine, sessionId: string, keep: number): Promise<void> {
  await db.run(
    `DELETE FROM _refresh_tokens WHERE session_id = ? AND used_at IS NOT NULL AND used_at < (
      SELECT used_at FROM _refresh_tokens WHERE session_id = ? AND used_at IS NOT NULL ORDER BY used_at DESC LIMIT 1 OFFSET ?)`,
    [sessionId, sessionId, keep - 1],
  );
}
