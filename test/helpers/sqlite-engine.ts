import { afterEach, beforeEach } from "bun:test";
import type { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";

/** A SQLite engine of its own for each test: a new file in a new temp directory. */
export interface ScratchSqlite {
  dir: string;
  /** The database file. */
  file: string;
  /** The engine; a test that closes it may put another here, which is closed after the test instead. */
  db: SqliteEngine;
}

/**
 * Before each test of the file (or `describe` block) that calls it: a SQLite engine on a new database
 * file, `setup` run on it (schema statements); after each: the engine closed and the directory removed.
 * `onOpen` sees the bun:sqlite connection before the engine takes it (to watch what it prepares).
 */
export function scratchSqlite(setup: string, onOpen?: (sqlite: Database) => void): ScratchSqlite {
  const scratch = {} as ScratchSqlite;
  beforeEach(async () => {
    scratch.dir = mkdtempSync(join(tmpdir(), "baas-engine-"));
    scratch.file = join(scratch.dir, "baas.db");
    const sqlite = openDatabase(scratch.file);
    onOpen?.(sqlite);
    scratch.db = new SqliteEngine(sqlite);
    if (setup) await scratch.db.exec(setup);
  });
  afterEach(async () => {
    await scratch.db.close();
    rmSync(scratch.dir, { recursive: true, force: true });
  });
  return scratch;
}

/** Counts the COMMIT statements `engine` runs from now on. */
export function countCommits(engine: SqliteEngine): () => number {
  const count = countStatements(engine);
  return () => count("COMMIT");
}

/** Counts the statements of each text (transaction control: BEGIN, SAVEPOINT, COMMIT, …) `engine` runs from now on. */
export function countStatements(engine: SqliteEngine): (text: string) => number {
  const seen = new Map<string, number>();
  const raw = engine.sqlite;
  const prepared = raw.query.bind(raw);
  raw.query = ((text: string) => (seen.set(text, (seen.get(text) ?? 0) + 1), prepared(text))) as typeof raw.query;
  return (text) => seen.get(text) ?? 0;
}
