import type { Engine } from "./engine.ts";

/** Reads one value of the `_meta` key/value table. */
export async function getMeta(db: Engine, key: string): Promise<string | null> {
  const row = await db.get<{ value: string }>("SELECT value FROM _meta WHERE key = ?", [key]);
  return row ? row.value : null;
}

/** Writes one value of the `_meta` key/value table. */
export async function setMeta(db: Engine, key: string, value: string): Promise<void> {
  await db.run("INSERT INTO _meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [key, value]);
}

/** Writes one value of the `_meta` key/value table unless the key has one; true when this call wrote it. */
export async function setMetaIfAbsent(db: Engine, key: string, value: string): Promise<boolean> {
  return (await db.run("INSERT INTO _meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, value])).changes > 0;
}

/** `_meta` key of the public URL of the last server started on this data directory. */
export const PUBLIC_URL_META = "public_url";
