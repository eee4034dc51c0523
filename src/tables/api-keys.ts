import type { Engine } from "../db/engine.ts";
import { ACCESS_COLUMNS, type UserAccessRow } from "./users.ts";

// The `_api_keys` table: the SQL that reads or writes it is written here (and only here).

/** A live API key with its user's access columns. */
export interface ApiKeyCheckRow extends UserAccessRow {
  id: string;
  user_id: string;
  last_used_at: number | null;
}

/** The live (not revoked) key of that hash, with its user's roles, metadata and address; null when none. */
export async function liveApiKeyByHash(db: Engine, hash: string): Promise<ApiKeyCheckRow | null> {
  return await db.get<ApiKeyCheckRow>(
    `SELECT k.id, k.user_id, k.last_used_at, ${ACCESS_COLUMNS} FROM _api_keys k JOIN _users u ON u.id = k.user_id
       WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    [hash],
  );
}

/** Notes that key `id` was used at `now`. */
export async function touchApiKey(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _api_keys SET last_used_at = ? WHERE id = ?", [now, id]);
}
