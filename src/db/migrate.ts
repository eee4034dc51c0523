import type { Database } from "bun:sqlite";
import { migrations } from "../../migrations/index.ts";

/** Applies every migration not yet recorded in `_migrations`, each in its own transaction. */
export function migrate(db: Database): string[] {
  db.exec("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)");
  const done = new Set(db.query<{ name: string }, []>("SELECT name FROM _migrations").all().map((r) => r.name));
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.name)) continue;
    db.transaction(() => {
      for (const stmt of m.sql.split("--> statement-breakpoint")) {
        if (stmt.trim()) db.exec(stmt);
      }
      db.query("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)").run(m.name, Date.now());
    }).immediate();
    applied.push(m.name);
  }
  return applied;
}
