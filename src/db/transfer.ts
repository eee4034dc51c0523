import { postgresMigrations } from "../../migrations/postgres/index.ts";
import { AppError } from "../errors.ts";
import type { Engine, SqlValue } from "./engine.ts";
import { q } from "./ident.ts";
import { pgIdentifier } from "./pg-placeholders.ts";
import { PostgresEngine } from "./postgres.ts";
import { SqliteEngine } from "./sqlite.ts";

// The engine-specific half of `baas db copy` (src/ops/copy.ts): reading a SQLite database table by table, and
// the tables, columns and foreign keys of an empty PostgreSQL database to fill. System tables are copied column
// by column (the columns both sides have, so a generated or identity column of PostgreSQL is left to PostgreSQL).

/** Row counts of one table on both sides after the copy. */
export interface CopiedTable {
  table: string;
  source: number;
  target: number;
}

/** Progress: rows of `table` written so far, of `total`. */
export type CopyProgress = (p: { table: string; done: number; total: number }) => void;

/** 400 unless `source` is a SQLite engine and `target` a PostgreSQL one: the one direction a copy goes. */
export function checkCopyEngines(source: Engine, target: Engine): void {
  if (!(source instanceof SqliteEngine)) throw new AppError(400, "bad_request", "db copy reads a SQLite data directory");
  if (!(target instanceof PostgresEngine)) throw new AppError(400, "bad_request", "db copy writes to a PostgreSQL database (--to postgres://…)");
}

/** Bound parameters per INSERT (PostgreSQL allows 65,535). */
const MAX_PARAMS = 30_000;
/** Rows per INSERT and per read of the source. */
const MAX_ROWS = 1_000;

/** The tables the migrations make (and `_migrations` itself): all an empty target may hold. */
const SYSTEM_TABLES = new Set([
  "_migrations",
  ...postgresMigrations.flatMap((m) => [...m.sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"(\w+)"/g)].map((x) => x[1])),
]);

/** Tables of the target's schema. */
async function targetTables(db: Engine): Promise<string[]> {
  const rows = await db.all<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  return rows.map((r) => r.name);
}

/** The columns of a target table, and those a copy may write (not generated, not identity), as PostgreSQL names them. */
async function targetColumns(db: Engine, table: string): Promise<{ all: Set<string>; writable: Set<string> }> {
  const rows = await db.all<{ name: string; generated: string; identity: string }>(
    "SELECT column_name AS name, is_generated AS generated, is_identity AS identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
    [pgIdentifier(table)],
  );
  return {
    all: new Set(rows.map((r) => r.name)),
    writable: new Set(rows.filter((r) => r.generated === "NEVER" && r.identity === "NO").map((r) => r.name)),
  };
}

/**
 * Refuses a target that holds anything: a table the migrations do not make, or a row in one they
 * make (their own bookkeeping aside). Checked before the target is migrated and again in the copy's
 * transaction.
 */
export async function assertTargetEmpty(db: Engine): Promise<void> {
  for (const table of await targetTables(db)) {
    if (!SYSTEM_TABLES.has(table)) throw targetNotEmpty(`it has a table "${table}"`);
    if (table !== "_migrations" && (await db.get(`SELECT 1 AS one FROM ${q(table)} LIMIT 1`))) throw targetNotEmpty(`table "${table}" has rows`);
  }
}

const targetNotEmpty = (why: string) =>
  new AppError(409, "conflict", `the target database is not empty (${why}); db copy only fills an empty database: create a new one (CREATE DATABASE) and copy into that`);

/** System tables in an order where every table comes after the tables its foreign keys name. */
export async function systemTablesInOrder(db: Engine): Promise<string[]> {
  const tables = (await targetTables(db)).filter((t) => t.startsWith("_") && t !== "_migrations");
  const refs = await db.all<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent FROM pg_catalog.pg_constraint k
       JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_class p ON p.oid = k.confrelid
      WHERE k.contype = 'f' AND c.relnamespace = CAST(current_schema() AS regnamespace)`,
  );
  const ordered: string[] = [];
  const placed = new Set<string>();
  const visit = (t: string, path: Set<string>) => {
    if (placed.has(t) || path.has(t)) return;
    path.add(t);
    for (const r of refs) if (r.child === t && r.parent !== t) visit(r.parent, path);
    placed.add(t);
    ordered.push(t);
  };
  for (const t of tables) visit(t, new Set());
  return ordered;
}

interface SourceTable {
  columns: string[];
  /** Primary-key columns of a WITHOUT ROWID table (read in key order); null: read in rowid order. */
  key: string[] | null;
}

/** The columns of a table of the SQLite source, and how to read it in order; null when it has no such table. */
async function sourceTable(db: Engine, table: string): Promise<SourceTable | null> {
  const master = await db.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table]);
  if (!master) return null;
  const info = await db.all<{ name: string; pk: number }>(`SELECT name, pk FROM pragma_table_info(?)`, [table]);
  const key = /WITHOUT\s+ROWID/i.test(master.sql)
    ? info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)
    : null;
  return { columns: info.map((c) => c.name), key };
}

async function count(db: Engine, table: string): Promise<number> {
  return Number((await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q(table)}`))!.n);
}

/**
 * Copies the rows of `table` (the columns both sides have), reading the source in key order in
 * chunks and writing each chunk with one multi-row INSERT. `rewrite` may change a row before it is written.
 */
export async function copyRows(
  source: Engine,
  target: Engine,
  table: string,
  onProgress: CopyProgress | undefined,
  rewrite?: (r: Record<string, SqlValue>) => void,
): Promise<CopiedTable> {
  const src = await sourceTable(source, table);
  if (!src) throw new Error(`the source has no table "${table}"`);
  const { all, writable } = await targetColumns(target, table);
  // A column the target lacks would be data lost without a word.
  const lost = src.columns.find((c) => !all.has(pgIdentifier(c)));
  if (lost !== undefined) throw new Error(`column "${lost}" of table "${table}" has no place in the target database`);
  const cols = src.columns.filter((c) => writable.has(pgIdentifier(c)));
  const total = await count(source, table);
  const perInsert = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, cols.length))));
  const list = cols.map(q).join(", ");
  const tuple = `(${cols.map(() => "?").join(", ")})`;
  let done = 0;
  onProgress?.({ table, done, total });
  // Keyset reads: by rowid, or by the primary key of a WITHOUT ROWID table (as a row value).
  const order = src.key ? src.key.map(q).join(", ") : "rowid";
  const after = src.key ? `(${order}) > (${src.key.map(() => "?").join(", ")})` : "rowid > ?";
  let last: SqlValue[] | null = null;
  for (;;) {
    const select: string = `SELECT ${src.key ? "" : "rowid AS __copy_rowid, "}${list} FROM ${q(table)}${last ? ` WHERE ${after}` : ""} ORDER BY ${order} LIMIT ?`;
    const rows: Record<string, SqlValue>[] = await source.all<Record<string, SqlValue>>(select, [...(last ?? []), perInsert]);
    if (!rows.length) break;
    const params: SqlValue[] = [];
    for (const r of rows) {
      rewrite?.(r);
      for (const c of cols) params.push(r[c] ?? null);
    }
    if (cols.length) await target.run(`INSERT INTO ${q(table)} (${list}) VALUES ${rows.map(() => tuple).join(", ")}`, params);
    const end: Record<string, SqlValue> = rows[rows.length - 1];
    last = src.key ? src.key.map((k) => end[k]) : [end.__copy_rowid];
    done += rows.length;
    onProgress?.({ table, done, total });
    if (rows.length < perInsert) break;
  }
  return { table, source: total, target: await count(target, table) };
}

/** Whether the SQLite source has that table (a system table of a newer migration may be missing). */
export async function sourceHasTable(db: Engine, table: string): Promise<boolean> {
  return (await sourceTable(db, table)) !== null;
}
