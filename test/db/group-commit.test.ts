import { beforeEach, expect, test } from "bun:test";
import type { SqliteEngine } from "../../src/db/sqlite.ts";
import { countCommits, scratchSqlite } from "../helpers/sqlite-engine.ts";

// SQLite's group commit: outermost transactions that start while one runs share its COMMIT, each in a
// savepoint of its own. Each must still behave as a transaction of its own: a failing one rolls back
// alone, nobody is answered (nor runs after-commit callbacks) before the shared COMMIT.

const scratch = scratchSqlite("CREATE TABLE items (id TEXT PRIMARY KEY)");
let db: SqliteEngine;
beforeEach(() => {
  db = scratch.db;
});

test("transactions started together share one COMMIT; a failing one rolls back alone and gets its own error", async () => {
  const order: string[] = [];
  const commits = countCommits(db);
  const results = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) =>
      db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", [`i${i}`]);
        await Promise.resolve();
        if (i === 4) throw new Error("fourth fails");
        db.afterCommit(() => order.push(`i${i} after ${commits()} commit`));
        return i;
      }),
    ),
  );
  expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([0, 1, 2, 3, "fourth fails", 5, 6, 7, 8, 9]);
  expect((await db.all<{ id: string }>("SELECT id FROM items ORDER BY id")).map((r) => r.id)).toEqual(["i0", "i1", "i2", "i3", "i5", "i6", "i7", "i8", "i9"]);
  // Every callback ran after the one COMMIT, in the order the transactions started.
  expect(order).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9].map((i) => `i${i} after 1 commit`));
  expect(commits()).toBe(1);
});

test("a transaction joining a group still sees the rows of the members before it, and nested savepoints inside members work", async () => {
  const counts = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", [`n${i}`]);
        await db
          .transaction(async () => {
            await db.run("INSERT INTO items (id) VALUES (?)", [`x${i}`]);
            throw new Error("inner");
          })
          .catch(() => {});
        return (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM items"))!.n;
      }),
    ),
  );
  expect(counts).toEqual([1, 2, 3, 4]);
  expect((await db.all<{ id: string }>("SELECT id FROM items ORDER BY id")).map((r) => r.id)).toEqual(["n0", "n1", "n2", "n3"]);
});
