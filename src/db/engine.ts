/**
 * What an engine must provide (SQLite in sqlite.ts, PostgreSQL in postgres.ts). Everything that differs
 * between engines lives in src/db; code above it says what it means and never asks which engine runs:
 * - this interface: statements with `?` placeholders (rewritten by the engine for its driver), transactions
 *   with savepoints, after-commit callbacks and group commit (the shared core is group-commit.ts; each engine
 *   says how it begins, commits and rolls back, and what a failed member costs the others), and the catalog's
 *   change marks (`changeMarks`: SQLite's `PRAGMA data_version`, PostgreSQL's snapshot; `schemaVersion`);
 * - `sql`, its dialect (dialect.ts; sqlite-dialect.ts, postgres-dialect.ts): conditions built as a neutral
 *   tree (condition.ts) by filters, read rules and relation filters; ORDER BY nulls; aggregates; the
 *   one-parameter "is one of" list; the insert-order tie-break; the DDL of collections (tables, column types,
 *   indexes, many_via junction tables, whether a name is taken); full text (FTS5 tables, triggers, `MATCH`
 *   and bm25; the generated `tsvector` column, its GIN index and tsquery, pg-fts.ts);
 * - the mapping of its driver's errors to AppErrors, in one place (sqlite-errors.ts, postgres-errors.ts),
 *   applied to every error that leaves it;
 * - optional facilities where only one engine has the thing: `listen` (notices between processes sharing the
 *   database), `backupTo` (a copy of the database file), `getBatched`, `runEach`; a property that says how
 *   its group commit begins (`groupBeginsAfterJoin`);
 * - the rest of src/db: opening SQLite's file with its PRAGMAs (open.ts), the system tables' migrations
 *   (migrate.ts, migrate-postgres.ts, migrations/), SQLite's WAL checkpointer (checkpointer.ts), and reading a
 *   SQLite database into an empty PostgreSQL one (transfer.ts).
 * Elsewhere, SQL uses only what SQLite and PostgreSQL share: `INSERT … ON CONFLICT … DO NOTHING / DO UPDATE SET
 * x = excluded.x`, `RETURNING`, window functions, identifiers quoted by `q` (ident.ts). One exception remains:
 * realtime/relay.ts sends its notices with `pg_notify` (it runs only where `listen` exists).
 */

/**
 * The storage interface: the only way code outside `src/db/` reaches the database. It is async
 * because a PostgreSQL driver is; the SQLite engine answers from bun:sqlite's synchronous calls.
 *
 * SQL text uses `?` placeholders (positional, in order); an engine rewrites them for its driver.
 * Statements run inside the transaction of the calling async context when one is open (see
 * `transaction`), else on their own.
 */

import type { Dialect } from "./dialect.ts";

/** A value a statement can take or return. Booleans are stored as the engine's own boolean/integer. */
export type SqlValue = string | number | bigint | boolean | null | Uint8Array;

export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

/** How an outermost transaction may be run (ignored inside a transaction, where it is a savepoint). */
export interface TransactionOptions {
  /**
   * The transaction may share one database transaction, and its COMMIT, with other transactions that allow
   * it and start meanwhile (PostgreSQL's group commit; SQLite groups every transaction already, and runs
   * these without a savepoint of their own, see SqliteEngine.commitGroup), and may be run more than once:
   * when one of the shared transaction's members fails, the whole database transaction rolls back and every member runs again in a transaction of its own (a member that fails
   * having written nothing, its reads aside, just gets its error). So what `fn` does outside the database belongs in
   * `afterCommit`, as for a run again after a serialization failure.
   */
  group?: boolean;
  /**
   * With `group`: `fn` reads nothing that another grouped transaction may write, besides the catalog (a
   * create of known fields only, in a collection without relations), so grouped members that allow it run
   * side by side, their statements pipelined on the group's one connection (one round trip for all).
   */
  independent?: boolean;
}

/** What the catalog cache compares to learn that the database may have changed (Engine.changeMarks). */
export interface ChangeMarks {
  /**
   * Moves whenever another connection may have committed (SQLite: `PRAGMA data_version`; PostgreSQL: a count of
   * this engine, moved whenever the snapshot read outside a transaction differs from the last one). Caches of
   * data (counts) keep the value they were made under.
   */
  dataVersion: number;
  /** The catalog's version (`_meta.schema_version`) when the engine read it in the same statement, else undefined. */
  schemaVersion?: number;
}

export interface Engine {
  /** How this engine writes what differs between engines: conditions, DDL, full text (see dialect.ts). */
  readonly sql: Dialect;
  /** The first row, or null. */
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T | null>;
  /**
   * As `get`, for a plain read that may wait until the end of this event-loop turn to run with the other
   * reads of the turn (SQLite: in one read transaction on the reading connection). Engines without it: `get`.
   */
  getBatched?<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T | null>;
  /** Every row. */
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** A statement without rows. */
  run(sql: string, params?: readonly SqlValue[]): Promise<RunResult>;
  /**
   * Runs one statement once per parameter list, in order, as `run` would each (the rows of a bulk insert),
   * without a promise per row. A row that fails stops it: the error is `onRowError(err, i)`, `i` the index
   * of that row. Engines without it: one multi-row statement (see records/store.ts, flushRows).
   */
  runEach?(sql: string, rows: readonly (readonly SqlValue[])[], onRowError: (err: unknown, i: number) => unknown): Promise<void>;
  /** One or more statements without parameters (schema changes). */
  exec(sql: string): Promise<void>;
  /** The catalog cache's cheap question "may another connection have committed?" (see ChangeMarks), asked once per turn. */
  changeMarks(): Promise<ChangeMarks>;
  /** changeMarks answered at once, for engines that need no round trip for it (SQLite). Engines without it: changeMarks. */
  changeMarksNow?(): ChangeMarks;
  /** The catalog's version, `_meta.schema_version` (0 before the first change). */
  schemaVersion(): Promise<number>;
  /**
   * Runs `fn` in one write transaction; inside an open one (same async context), in a savepoint that
   * rolls back alone when `fn` throws. Every `get/all/run/exec` made by `fn` (and what it awaits)
   * joins it. Transactions of different async contexts never interleave on one connection.
   */
  transaction<T>(fn: () => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * An object standing for the current run of the outermost database transaction of this async context
   * (undefined outside one): transactions that share one database transaction (PostgreSQL's group commit)
   * get the same one, a run again after a rollback gets a new one. The catalog keeps what a write
   * transaction changed of it under that object (see catalogView).
   */
  transactionRun(): object | undefined;
  /** True inside a transaction of the current async context. */
  inTransaction(): boolean;
  /** Queues `cb` to run after the outermost transaction of this async context commits (at once outside one). */
  afterCommit(cb: () => void): void;
  /**
   * True when a grouped transaction (TransactionOptions.group) begins only once its members have joined, so what it
   * reads is as fresh as a read made when each member was asked (PostgreSQL): a member may check the catalog inside
   * it instead of before. (SQLite's members join the transaction running, on the one writing connection.)
   */
  readonly groupBeginsAfterJoin: boolean;
  /**
   * Listens on `channel` for notices sent by any process sharing the database (PostgreSQL LISTEN/NOTIFY), on a
   * connection of its own. `onListen` runs once the server has acknowledged it, and again after every reconnect
   * (notices sent while the connection was down are lost). `onLost` runs as soon as the connection is lost; the
   * engine then tries to listen again, soon and often (the first try within a second of the database answering
   * again). Returns the function that stops listening. Engines without it: only one process serves the database.
   */
  listen?(channel: string, onNotify: (payload: string) => void, onListen?: () => void, onLost?: (err: unknown) => void): Promise<() => Promise<void>>;
  /** Writes a consistent copy of the whole database to a new file `file` while writers go on. Engines without it: none (PostgreSQL has pg_dump). */
  backupTo?(file: string): Promise<void>;
  /** Closes the connection(s). */
  close(): Promise<void>;
}

/** Runs statements (a dialect's schema changes) one after the other. */
export async function execAll(db: Engine, statements: readonly string[]): Promise<void> {
  for (const s of statements) await db.exec(s);
}
