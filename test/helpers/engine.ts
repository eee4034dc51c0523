import { join, resolve } from "node:path";
import type { Engine, SqlValue } from "../../src/db/engine.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { postgresDialect } from "../../src/db/postgres-dialect.ts";
import { createTestDatabase, postgresAvailable } from "./postgres.ts";

/**
 * Which engine the HTTP and CLI tests run on: SQLite by default, PostgreSQL with BAAS_TEST_ENGINE=postgres
 * (`npm test` runs those suites once on each; see scripts/test.ts).
 */
export const testEngine: "sqlite" | "postgres" = process.env.BAAS_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";
export const onPostgres = testEngine === "postgres";

if (onPostgres && !postgresAvailable) throw new Error("BAAS_TEST_ENGINE=postgres, but PostgreSQL's server binaries were not found");

/** A URL of a fresh, migrated database on the test cluster. */
export function freshDatabaseUrl(): Promise<string> {
  return createTestDatabase({ migrated: true });
}

const byDataDir = new Map<string, Promise<string>>();

/**
 * The database of a data directory: on PostgreSQL a test app, `serve` and every CLI run of one data
 * directory share one fresh database, made on first use, as they share its SQLite file otherwise.
 */
export function databaseUrlForDir(dir: string): Promise<string> {
  const key = resolve(dir);
  let url = byDataDir.get(key);
  if (!url) byDataDir.set(key, (url = freshDatabaseUrl()));
  return url;
}

/**
 * An engine usable at once whose PostgreSQL database (`url`) is made in the background: every call waits for it.
 * Test apps are built synchronously (createTestApp), and their `ready` promise waits for `opened`.
 */
export function lazyPostgres(url: Promise<string> = freshDatabaseUrl()): { engine: Engine; opened: Promise<Engine>; url: Promise<string> } {
  let real: Engine | null = null;
  const opened = url.then((u) => (real = openPostgres({ url: u, poolSize: 4 })));
  const engine: Engine = {
    sql: postgresDialect,
    groupBeginsAfterJoin: true,
    get: async <T>(sql: string, params?: readonly SqlValue[]) => (real ?? (await opened)).get<T>(sql, params),
    all: async <T>(sql: string, params?: readonly SqlValue[]) => (real ?? (await opened)).all<T>(sql, params),
    run: async (sql, params) => (real ?? (await opened)).run(sql, params),
    exec: async (sql) => (real ?? (await opened)).exec(sql),
    changeMarks: async () => (real ?? (await opened)).changeMarks(),
    schemaVersion: async () => (real ?? (await opened)).schemaVersion(),
    transaction: async (fn, opts) => (real ?? (await opened)).transaction(fn, opts),
    transactionRun: () => real?.transactionRun(),
    inTransaction: () => real?.inTransaction() ?? false,
    afterCommit: (cb) => (real ? real.afterCommit(cb) : cb()),
    close: async () => (await opened.catch(() => null))?.close(),
  };
  return { engine, opened, url };
}

/**
 * Options for `createContext` that open a second connection to a test app's database, as another
 * process (the CLI) or another node would: on SQLite the data directory's file (no engine given), on
 * PostgreSQL a pool of its own on the app's database. `closeContext` closes it.
 */
export async function secondEngine(t: { databaseUrl: Promise<string> | null }): Promise<{ engine?: Engine }> {
  return t.databaseUrl ? { engine: openPostgres({ url: await t.databaseUrl, poolSize: 2 }) } : {};
}

/**
 * Runs one statement as another process on a test app's database would (the CLI, any other tool, another
 * node): on SQLite a second bun process writing the database file, on PostgreSQL a connection pool of its own.
 */
export async function runElsewhere(t: { dir: string; databaseUrl: Promise<string> | null }, sql: string, params: SqlValue[] = []): Promise<void> {
  const { engine } = await secondEngine(t);
  if (engine) {
    try {
      await engine.run(sql, params);
    } finally {
      await engine.close();
    }
    return;
  }
  const script = `import { Database } from "bun:sqlite"; const db = new Database(process.env.DB_FILE); db.exec("PRAGMA busy_timeout = 5000"); const s = JSON.parse(process.env.STATEMENT); db.query(s.sql).run(...s.params); db.close();`;
  const proc = Bun.spawn([process.execPath, "-e", script], {
    cwd: t.dir,
    env: { ...process.env, DB_FILE: join(t.dir, "baas.db"), STATEMENT: JSON.stringify({ sql, params }) },
    stdout: "pipe",
    stderr: "pipe",
  });
  if ((await proc.exited) !== 0) throw new Error(`other process failed: ${await new Response(proc.stderr).text()}`);
}

/**
 * Holds the answer of the next statement `db.get` or `db.all` runs whose text `matches` (already run) until
 * `release` is called; `reached` settles when it got there.
 */
export function holdNextStatement(db: Engine, method: "get" | "all", matches: (sql: string) => boolean): { reached: Promise<void>; release: () => void } {
  const run = db[method].bind(db) as (sql: string, params?: readonly SqlValue[]) => Promise<unknown>;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  let armed = true;
  (db as unknown as Record<string, unknown>)[method] = async (sql: string, params?: readonly SqlValue[]) => {
    const answer = await run(sql, params);
    if (armed && matches(sql)) {
      armed = false;
      reach();
      await gate;
    }
    return answer;
  };
  return { reached, release };
}
