import { listParam } from "../db/condition.ts";
import type { Engine } from "../db/engine.ts";
import { accessStatement, type UserAccessRow } from "./users.ts";

// The `_sessions` table: the SQL that reads or writes it is written here (and only here).

/** A session as a request checks it, with its user's access columns (one read for both). */
export interface SessionCheckRow extends UserAccessRow {
  user_id: string;
  revoked_at: number | null;
  expires_at: number;
  last_used_at: number;
}

const checkSql = accessStatement("s.user_id", (columns, join) => `SELECT s.user_id, s.revoked_at, s.expires_at, s.last_used_at, ${columns} FROM _sessions s ${join} WHERE s.id = ?`);

const withUser = (row: SessionCheckRow | null) => (row && row.email !== null ? row : null);

/**
 * The session `id` and its user's roles and metadata as committed when asked (null: no such session, or its
 * user is gone). A plain read: it may run with the other reads of this event-loop turn, in one read
 * transaction (Engine.getBatched).
 */
export function sessionCheckRow(db: Engine, id: string): Promise<SessionCheckRow | null> {
  const sql = checkSql(db);
  return (db.getBatched ? db.getBatched<SessionCheckRow>(sql, [id]) : db.get<SessionCheckRow>(sql, [id])).then(withUser);
}

/** Notes that session `id` was used at `now`. */
export async function touchSession(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _sessions SET last_used_at = ? WHERE id = ?", [now, id]);
}

/** A session row as stored. */
export interface SessionRow {
  id: string;
  user_id: string;
  created_at: number;
  last_used_at: number;
  expires_at: number;
  ip: string | null;
  user_agent: string | null;
  revoked_at: number | null;
}

/** Stores a new session. */
export async function insertSession(
  db: Engine,
  s: { id: string; userId: string; now: number; expiresAt: number; ip: string | null; userAgent: string | null },
): Promise<void> {
  await db.run("INSERT INTO _sessions (id, user_id, created_at, last_used_at, expires_at, ip, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?)", [
    s.id, s.userId, s.now, s.now, s.expiresAt, s.ip, s.userAgent,
  ]);
}

/** The session of that id, or null. */
export async function sessionById(db: Engine, id: string): Promise<SessionRow | null> {
  return await db.get<SessionRow>("SELECT * FROM _sessions WHERE id = ?", [id]);
}

/** Revokes one session; true when it was active. */
export async function revokeSessionRow(db: Engine, id: string, now: number): Promise<boolean> {
  return (await db.run("UPDATE _sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [now, id])).changes > 0;
}

/** Revokes every active session of a user; how many. */
export async function revokeUserSessionRows(db: Engine, userId: string, now: number): Promise<number> {
  return (await db.run("UPDATE _sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [now, userId])).changes;
}

/** A user's sessions neither revoked nor expired at `now`, newest first. */
export async function activeUserSessionRows(db: Engine, userId: string, now: number): Promise<SessionRow[]> {
  return await db.all<SessionRow>("SELECT * FROM _sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC", [userId, now]);
}

/** Which of these sessions are live at `now` (not revoked, not expired), with their users: one query. */
export async function liveSessionRows(db: Engine, ids: readonly string[], now: number): Promise<{ id: string; user_id: string; expires_at: number }[]> {
  return await db.all<{ id: string; user_id: string; expires_at: number }>(
    `SELECT id, user_id, expires_at FROM _sessions WHERE id ${db.sql.inList} AND revoked_at IS NULL AND expires_at > ?`,
    [listParam(ids), now],
  );
}
