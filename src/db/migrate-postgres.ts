import { postgresMigrations } from "../../migrations/postgres/index.ts";
import type { Engine } from "./engine.ts";

/** Key of the advisory lock held while migrating, so nodes started together migrate once. */
const MIGRATION_LOCK = 7_362_101;

/**
 * Applies every PostgreSQL migration not yet recorded in `_migrations` (the same bookkeeping as the SQLite
 * runner), all in one transaction under an advisory lock: a second node starting at the same time waits,
 * then finds them applied.
 */
export async function migratePostgres(engine: Engine): Promise<string[]> {
  return engine.transaction(async () => {
    // Read committed (allowed as the first statement): after waiting for the lock, this transaction
    // must see what the node that held it committed.
    await engine.exec("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
    await engine.get("SELECT pg_advisory_xact_lock(CAST(? AS bigint)) AS locked", [MIGRATION_LOCK]);
    await engine.exec('CREATE TABLE IF NOT EXISTS "_migrations" ("name" text PRIMARY KEY NOT NULL, "applied_at" bigint NOT NULL)');
    const done = new Set((await engine.all<{ name: string }>('SELECT "name" FROM "_migrations"')).map((r) => r.name));
    const applied: string[] = [];
    for (const m of postgresMigrations) {
      if (done.has(m.name)) continue;
      for (const stmt of m.sql.split("--> statement-breakpoint")) {
        if (stmt.trim()) await engine.exec(stmt);
      }
      await engine.run('INSERT INTO "_migrations" ("name", "applied_at") VALUES (?, ?)', [m.name, Date.now()]);
      applied.push(m.name);
    }
    return applied;
  });
}
