import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";

// `--database` / DATABASE_URL choose the engine; DB_POOL_SIZE and DB_STATEMENT_TIMEOUT_MS tune PostgreSQL.
// A bad value stops the start with a message that never repeats the URL (it may hold a password).
describe("database configuration", () => {
  const load = (flags: { database?: string }, env: Record<string, string> = {}) => loadConfig({ data: "/tmp/x", ...flags }, env).database;

  test("without a URL the data lives in SQLite", () => {
    expect(load({})).toEqual({ engine: "sqlite" });
    expect(load({}, { DATABASE_URL: "  " })).toEqual({ engine: "sqlite" });
  });

  test("DATABASE_URL selects PostgreSQL with a pool of 10 and a 30 s statement timeout", () => {
    expect(load({}, { DATABASE_URL: "postgres://app:s3cret@db.internal:5432/baas" })).toEqual({
      engine: "postgres",
      url: "postgres://app:s3cret@db.internal:5432/baas",
      poolSize: 10,
      statementTimeoutMs: 30_000,
    });
  });

  test("the --database flag wins over DATABASE_URL; postgresql:// is accepted too", () => {
    expect(load({ database: "postgresql://localhost/flag" }, { DATABASE_URL: "postgres://localhost/env" })).toMatchObject({
      engine: "postgres",
      url: "postgresql://localhost/flag",
    });
  });

  test("DB_POOL_SIZE and DB_STATEMENT_TIMEOUT_MS set the pool and the timeout (0 = none)", () => {
    expect(load({ database: "postgres://localhost/db" }, { DB_POOL_SIZE: "4", DB_STATEMENT_TIMEOUT_MS: "0" })).toMatchObject({
      poolSize: 4,
      statementTimeoutMs: 0,
    });
  });

  const bad: [string, string | undefined, Record<string, string>, string][] = [
    ["another scheme", "mysql://root:s3cret@localhost/db", {}, "database must be a postgres:// URL, got a mysql:// URL"],
    ["not a URL", "s3cret at localhost", {}, "database must be a postgres:// URL (postgres://user:password@host:port/database)"],
    ["a port out of range", "postgres://u:s3cret@localhost:99999/db", {}, "database must be a postgres:// URL (postgres://user:password@host:port/database)"],
    ["no database name", "postgres://u:s3cret@localhost:5432/", {}, "database URL must name a database: postgres://host:port/database"],
    ["a pool of 0", "postgres://u:s3cret@localhost/db", { DB_POOL_SIZE: "0" }, 'DB_POOL_SIZE must be an integer >= 1, got "0"'],
    ["a pool over 1000", "postgres://u:s3cret@localhost/db", { DB_POOL_SIZE: "5000" }, "DB_POOL_SIZE must be at most 1000, got 5000"],
    ["a negative timeout", "postgres://u:s3cret@localhost/db", { DB_STATEMENT_TIMEOUT_MS: "-1" }, 'DB_STATEMENT_TIMEOUT_MS must be an integer >= 0, got "-1"'],
  ];
  for (const [name, database, env, message] of bad) {
    test(`${name} is refused with a message that does not repeat the URL`, () => {
      let err: unknown;
      try {
        load({ database }, env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toBe(message);
      expect((err as Error).message).not.toContain("s3cret");
    });
  }
});
