import { q } from "../../src/db/ident.ts";
import type { Engine, SqlValue } from "../../src/db/engine.ts";
import { postgresDialect } from "../../src/db/postgres-dialect.ts";

/**
 * What tests ask about the stored schema and rows, on either engine: SQLite's catalog is `sqlite_master`
 * and `PRAGMA table_info`, PostgreSQL's `pg_catalog` (objects of the current schema only).
 */
type HasDb = { db: Engine };

type EngineKind = "sqlite" | "postgres";

/** Which engine `db` is (tests look at each engine's own catalog). */
export const engineKind = (db: Engine): EngineKind => (db.sql === postgresDialect ? "postgres" : "sqlite");

const OBJECT_EXISTS: Record<EngineKind, Record<"table" | "index" | "any", string>> = {
  sqlite: {
    table: "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?",
    index: "SELECT 1 AS found FROM sqlite_master WHERE type = 'index' AND name = ?",
    any: "SELECT 1 AS found FROM sqlite_master WHERE name = ?",
  },
  postgres: {
    table: "SELECT 1 AS found FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?",
    index: "SELECT 1 AS found FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND indexname = ?",
    any: "SELECT 1 AS found FROM pg_catalog.pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) AND relname = ?",
  },
};

async function objectExists(t: HasDb, kind: "table" | "index" | "any", name: string): Promise<boolean> {
  return (await t.db.get(OBJECT_EXISTS[engineKind(t.db)][kind], [name])) !== null;
}

/** Whether a table of exactly that name exists. */
export const tableExists = (t: HasDb, name: string) => objectExists(t, "table", name);

/** Whether an index of exactly that name exists. */
export const indexExists = (t: HasDb, name: string) => objectExists(t, "index", name);

/** Whether a table, index or any other schema object of exactly that name exists. */
export const schemaObjectExists = (t: HasDb, name: string) => objectExists(t, "any", name);

/** The columns of a table, in their order. */
export async function columnNames(t: HasDb, table: string): Promise<string[]> {
  const rows =
    engineKind(t.db) === "postgres"
      ? await t.db.all<{ name: string }>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
          [table],
        )
      : await t.db.all<{ name: string }>(`PRAGMA table_info(${q(table)})`);
  return rows.map((r) => r.name);
}

/** The number of rows of a table, optionally only those matching `where` (SQL with `?` bound to `params`). */
export async function countRows(t: HasDb, table: string, where?: string, params: SqlValue[] = []): Promise<number> {
  const sql = `SELECT COUNT(*) AS n FROM ${q(table)}${where ? ` WHERE ${where}` : ""}`;
  return (await t.db.get<{ n: number }>(sql, params))!.n;
}

/**
 * The plan of a query as one text, naming the indexes it uses. On PostgreSQL sequential scans are
 * turned off for it: on a table of a few rows the planner would scan it whatever the indexes.
 */
export async function queryPlan(t: HasDb, sql: string, params: SqlValue[] = []): Promise<string> {
  if (engineKind(t.db) === "sqlite") {
    const rows = await t.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params);
    return rows.map((r) => r.detail).join(" ");
  }
  return await t.db.transaction(async () => {
    await t.db.exec("SET LOCAL enable_seqscan = off");
    const rows = await t.db.all<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, params);
    return rows.map((r) => r["QUERY PLAN"]).join(" ");
  });
}
