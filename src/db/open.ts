import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

/** Opens the SQLite file with the pragmas of CONTRACT §0: WAL, foreign keys, 5 s busy timeout. */
export function openDatabase(path: string, opts: { sync?: "normal" | "full" } = {}): Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { create: true, strict: true });
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA synchronous = ${opts.sync === "full" ? "FULL" : "NORMAL"}`);
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA temp_store = MEMORY");
  db.exec("PRAGMA cache_size = -32000");
  return db;
}
