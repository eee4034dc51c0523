import type { Engine } from "../db/engine.ts";

// The `_settings` table: the SQL that reads or writes it is written here (and only here).

/** Every stored setting, its value as JSON text. */
export async function allSettingRows(db: Engine): Promise<{ key: string; value: string }[]> {
  return await db.all<{ key: string; value: string }>("SELECT key, value FROM _settings");
}

/** The stored value (JSON text) of one setting, or null when it was never set. */
export async function settingValue(db: Engine, key: string): Promise<string | null> {
  return (await db.get<{ value: string }>("SELECT value FROM _settings WHERE key = ?", [key]))?.value ?? null;
}

/** Stores a setting's value (JSON text), replacing the one stored. */
export async function storeSetting(db: Engine, key: string, value: string, now: number): Promise<void> {
  await db.run(
    "INSERT INTO _settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    [key, value, now],
  );
}
