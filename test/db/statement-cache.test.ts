import { beforeEach, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { MAX_STATEMENTS, StatementCache } from "../../src/db/statements.ts";
import { scratchSqlite } from "../helpers/sqlite-engine.ts";

let prepared: string[];
const scratch = scratchSqlite("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)", (sqlite) => {
  prepared = [];
  const prepare = sqlite.prepare.bind(sqlite);
  sqlite.prepare = ((sql: string, ...rest: []) => {
    prepared.push(sql);
    return prepare(sql, ...rest);
  }) as typeof sqlite.prepare;
});
let db: SqliteEngine;
beforeEach(() => {
  db = scratch.db;
});

test("each distinct statement is prepared once, also with many more than 20 in use", async () => {
  const texts = Array.from({ length: 40 }, (_, i) => `SELECT n + ${i} AS v FROM t WHERE id = ?`);
  await db.run("INSERT INTO t (id, n) VALUES (?, ?)", [1, 10]);
  for (let round = 0; round < 3; round++)
    for (const [i, sql] of texts.entries()) expect(await db.get(sql, [1])).toEqual({ v: 10 + i });
  expect(prepared.filter((sql) => sql.startsWith("SELECT n +")).length).toBe(40);
});

test("closing the engine finalizes its statements, so the connection really closes (the WAL goes)", async () => {
  await db.run("INSERT INTO t (id, n) VALUES (?, ?)", [1, 10]);
  expect(await db.get("SELECT n FROM t WHERE id = ?", [1])).toEqual({ n: 10 });
  expect(existsSync(`${scratch.file}-wal`)).toBe(true);
  await db.close();
  expect(existsSync(`${scratch.file}-wal`)).toBe(false);
  scratch.db = new SqliteEngine(openDatabase(scratch.file));
});

test("a full cache starts over", () => {
  const sqlite = openDatabase(join(scratch.dir, "other.db"));
  const cache = new StatementCache(sqlite);
  const first = cache.get("SELECT 0");
  expect(cache.get("SELECT 0")).toBe(first);
  for (let i = 1; i < MAX_STATEMENTS; i++) cache.get(`SELECT ${i}`);
  expect(cache.size).toBe(MAX_STATEMENTS);
  cache.get("SELECT 'one more'");
  expect(cache.size).toBe(1);
  expect(cache.get("SELECT 0")).not.toBe(first);
  cache.clear();
  sqlite.close();
});
