import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { migrate } from "../../src/db/migrate.ts";
import { migrations } from "../../migrations/index.ts";

const names = (db: Database) => db.query<{ name: string }, []>("SELECT name FROM _migrations ORDER BY name").all().map((r) => r.name);
const tables = (db: Database) =>
  db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((r) => r.name);

test("a new database gets every migration, recorded once; a second run applies nothing", () => {
  const db = new Database(":memory:");
  expect(migrate(db)).toEqual(migrations.map((m) => m.name));
  expect(names(db)).toEqual(migrations.map((m) => m.name).sort());
  expect(migrate(db)).toEqual([]);
  expect(names(db)).toEqual(migrations.map((m) => m.name).sort());
});

test("a migration that fails leaves the database as it was, those before it in the same run included", () => {
  const db = new Database(":memory:");
  const list = [
    { name: "0001_a", sql: "CREATE TABLE a (x INTEGER)" },
    { name: "0002_b", sql: "CREATE TABLE b (x INTEGER);\n--> statement-breakpoint\nCREATE TABLE b (y INTEGER)" },
  ];
  expect(() => migrate(db, list)).toThrow(/already exists/);
  expect(names(db)).toEqual([]);
  expect(tables(db)).toEqual(["_migrations"]);
  // Fixed, the run applies both; one already recorded is skipped.
  list[1]!.sql = "CREATE TABLE b (x INTEGER)";
  expect(migrate(db, list)).toEqual(["0001_a", "0002_b"]);
  expect(migrate(db, [...list, { name: "0003_c", sql: "CREATE TABLE c (x INTEGER)" }])).toEqual(["0003_c"]);
  expect(tables(db)).toEqual(["_migrations", "a", "b", "c"]);
});
