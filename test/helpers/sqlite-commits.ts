import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";

/** Counts the COMMIT statements the engine runs from now on. */
export function countCommits(engine: SqliteEngine): () => number {
  let n = 0;
  const raw = engine.sqlite;
  const prepared = raw.query.bind(raw);
  raw.query = ((text: string) => ((n += text === "COMMIT" ? 1 : 0), prepared(text))) as typeof raw.query;
  return () => n;
}

/**
 * A SQLite engine on a fresh file (WAL, so it has a reading connection) with a table `items (id TEXT PRIMARY
 * KEY)`, counting its COMMITs from then on; `close` closes it and removes the file.
 */
export async function itemsEngine(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const db = new SqliteEngine(openDatabase(join(dir, "baas.db")));
  await db.exec("CREATE TABLE items (id TEXT PRIMARY KEY)");
  return {
    db,
    commits: countCommits(db),
    async close() {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
