import type { Database } from "bun:sqlite";
import { migrations } from "../../migrations/index.ts";

/**
 * Applies every migration not yet recorded in `_migrations`, all in one transaction: a new data directory
 * commits once (not once per migration), and a migration that fails leaves the database as it was.
 */
export function migrate(db: Database, list: readonly { name: string; sql: string }[] = migrations): string[] {
  db.exec("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)");
  return db
    .transaction(() => {
      const done = new Set(db.query<{ name: string }, []>("SELECT name FROM _migrations").all().map((r) => r.name));
      const applied: string[] = [];
      for (const m of list) {
        if (done.has(m.name)) continue;
        for (const stmt of m.sql.split("--> statement-breakpoint")) {
          if (stmt.trim()) db.exec(stmt);
        }
        db.query("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)").run(m.name, Date.now());
        applied.push(m.name);
      }
      return applied;
    })
    .immediate();
}
