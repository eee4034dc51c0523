import { listParam } from "../db/condition.ts";
import type { Engine } from "../db/engine.ts";
import { accessStatement, type UserAccessRow } from "./users.ts";

// The `_api_keys` table: the SQL that reads or writes it is written here (and only here).

/** A live API key with its user's access columns. */
export interface ApiKeyCheckRow extends UserAccessRow {
  id: string;
  user_id: string;
  last_used_at: number | null;
}

const byHashSql = accessStatement("k.user_id", (columns, join) => `SELECT k.id, k.user_id, k.last_used_at, ${columns} FROM _api_keys k ${join} WHERE k.key_hash = ? AND k.revoked_at IS NULL`);
const byIdSql = accessStatement("k.user_id", (columns, join) => `SELECT k.id, k.user_id, k.last_used_at, ${columns} FROM _api_keys k ${join} WHERE k.id = ? AND k.user_id = ? AND k.revoked_at IS NULL`);

/** The live (not revoked) key of that hash, with its user's roles, metadata and address; null when none. */
export async function liveApiKeyByHash(db: Engine, hash: string): Promise<ApiKeyCheckRow | null> {
  const row = await db.get<ApiKeyCheckRow>(byHashSql(db), [hash]);
  return row && row.email !== null ? row : null;
}

/** The live key `id` of user `userId`, with the user's access columns; null when revoked, another's or gone. */
export async function liveApiKeyOfUser(db: Engine, id: string, userId: string): Promise<ApiKeyCheckRow | null> {
  const row = await db.get<ApiKeyCheckRow>(byIdSql(db), [id, userId]);
  return row && row.email !== null ? row : null;
}

/** Notes that key `id` was used at `now`. */
export async function touchApiKey(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _api_keys SET last_used_at = ? WHERE id = ?", [now, id]);
}

/** An API key as its owner lists it. */
export interface ApiKeyListRow {
  id: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** Stores a new key by its hash. */
export async function insertApiKey(db: Engine, k: { id: string; userId: string; name: string; hash: string; now: number }): Promise<void> {
  await db.run("INSERT INTO _api_keys (id, user_id, name, key_hash, created_at) VALUES (?, ?, ?, ?, ?)", [k.id, k.userId, k.name, k.hash, k.now]);
}

/** A user's live keys, oldest first. */
export async function userApiKeyRows(db: Engine, userId: string): Promise<ApiKeyListRow[]> {
  return await db.all<ApiKeyListRow>(`SELECT id, name, created_at, last_used_at FROM _api_keys WHERE user_id = ? AND revoked_at IS NULL ORDER BY created_at, ${db.sql.insertOrder}`, [userId]);
}

/** How many live keys a user has. */
export async function liveApiKeyCount(db: Engine, userId: string): Promise<number> {
  return Number((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM _api_keys WHERE user_id = ? AND revoked_at IS NULL", [userId]))?.n ?? 0);
}

/** Revokes a user's key; true when it was live. */
export async function revokeApiKeyRow(db: Engine, id: string, userId: string, now: number): Promise<boolean> {
  return (await db.run("UPDATE _api_keys SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL", [now, id, userId])).changes > 0;
}

/** Revokes every live key of a user; how many. */
export async function revokeUserApiKeyRows(db: Engine, userId: string, now: number): Promise<number> {
  return (await db.run("UPDATE _api_keys SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [now, userId])).changes;
}

/** Which of these keys are live (not revoked), with their users: one query. */
export async function liveApiKeyRows(db: Engine, ids: readonly string[]): Promise<{ id: string; user_id: string }[]> {
  return await db.all<{ id: string; user_id: string }>(`SELECT id, user_id FROM _api_keys WHERE id ${db.sql.inList} AND revoked_at IS NULL`, [listParam(ids)]);
}
