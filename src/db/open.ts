import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Pages of a new database file (SQLite's default is 4 KiB). A transaction of many rows (a bulk insert)
 * dirties pages of every index at random, and each COMMIT writes whole pages to the WAL and later copies
 * them to the file: 8 KiB pages hold twice the index entries per page, so such a transaction writes and
 * copies fewer pages and SQLite's own work per row falls by about a fifth. Larger pages cost small
 * transactions (a single create) more bytes per COMMIT than they save. Only a file with no table yet takes it.
 */
export const PAGE_SIZE = 8192;

/** Opens the SQLite file with the pragmas of CONTRACT §0: WAL, foreign keys, 5 s busy timeout. */
export function openDatabase(path: string, opts: { sync?: "normal" | "full" } = {}): Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { create: true, strict: true });
  db.exec("PRAGMA busy_timeout = 5000");
  // Before WAL: a database in WAL mode keeps the page size it has.
  db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA synchronous = ${opts.sync === "full" ? "FULL" : "NORMAL"}`);
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA temp_store = MEMORY");
  db.exec("PRAGMA cache_size = -32000");
  return db;
}
