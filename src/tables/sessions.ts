import type { Engine } from "../db/engine.ts";
import { ACCESS_COLUMNS, type UserAccessRow } from "./users.ts";

// The `_sessions` table: the SQL that reads or writes it is written here (and only here).

/** A session as a request checks it, with its user's access columns (one read for both). */
export interface SessionCheckRow extends UserAccessRow {
  user_id: string;
  revoked_at: number | null;
  expires_at: number;
  last_used_at: number;
}

const CHECK_SQL = `SELECT s.user_id, s.revoked_at, s.expires_at, s.last_used_at, ${ACCESS_COLUMNS}
  FROM _sessions s JOIN _users u ON u.id = s.user_id WHERE s.id = ?`;

/**
 * The session `id` and its user's roles and metadata as committed when asked (null: no such session, or its
 * user is gone). A plain read: it may run with the other reads of this event-loop turn, in one read
 * transaction (Engine.getBatched).
 */
export function sessionCheckRow(db: Engine, id: string): Promise<SessionCheckRow | null> {
  return db.getBatched ? db.getBatched<SessionCheckRow>(CHECK_SQL, [id]) : db.get<SessionCheckRow>(CHECK_SQL, [id]);
}

/** Notes that session `id` was used at `now`. */
export async function touchSession(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _sessions SET last_used_at = ? WHERE id = ?", [now, id]);
}
