import type { Database } from "bun:sqlite";

/** Reads one value of the `_meta` key/value table. */
export function getMeta(sqlite: Database, key: string): string | null {
  const row = sqlite.query<{ value: string }, [string]>("SELECT value FROM _meta WHERE key = ?").get(key);
  return row ? row.value : null;
}

/** Writes one value of the `_meta` key/value table. */
export function setMeta(sqlite: Database, key: string, value: string): void {
  sqlite
    .query("INSERT INTO _meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
    .run(key, value);
}

/** `_meta` key of the public URL of the last server started on this data directory. */
export const PUBLIC_URL_META = "public_url";
