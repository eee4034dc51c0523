import { beforeEach, expect, test } from "bun:test";
import type { SqliteEngine } from "../../src/db/sqlite.ts";
import { countStatements, scratchSqlite } from "../helpers/sqlite-engine.ts";

// Transactions that may run again (TransactionOptions.group: a create without hooks) share a COMMIT
// without a savepoint each. One that fails having changed nothing gets its error alone; one that fails
// after a change makes the transaction start over, and the members done before it run again. A member
// that may not run again is never run twice.

const scratch = scratchSqlite("CREATE TABLE items (id TEXT PRIMARY KEY)");
let db: SqliteEngine;
let count: (text: string) => number;
beforeEach(() => {
  db = scratch.db;
  count = countStatements(db);
});

/** A transaction inserting `id`, counting its runs in `runs`; `fail` throws after the insert (or "before" it). */
function insert(id: string, runs: Map<string, number>, opts: { group?: boolean; fail?: "after" | "before" } = {}) {
  return db.transaction(async () => {
    runs.set(id, (runs.get(id) ?? 0) + 1);
    if (opts.fail === "before") throw new Error(`${id} refused`);
    await db.run("INSERT INTO items (id) VALUES (?)", [id]);
    if (opts.fail === "after") throw new Error(`${id} failed after writing`);
    return id;
  }, opts.group === false ? undefined : { group: true });
}

const ids = async () => (await db.all<{ id: string }>("SELECT id FROM items ORDER BY id")).map((r) => r.id);

test("members that may run again share one COMMIT without a savepoint each", async () => {
  const runs = new Map<string, number>();
  expect(await Promise.all(["a", "b", "c"].map((id) => insert(id, runs)))).toEqual(["a", "b", "c"]);
  expect(count("COMMIT")).toBe(1);
  expect(count("SAVEPOINT member")).toBe(0);
  expect(await ids()).toEqual(["a", "b", "c"]);
});

test("one whose only statement fails, or that throws before writing, gets its error alone; nothing runs twice", async () => {
  await db.run("INSERT INTO items (id) VALUES ('taken')");
  const runs = new Map<string, number>();
  const results = await Promise.allSettled([
    insert("a", runs),
    insert("taken", runs),
    insert("b", runs, { fail: "before" }),
    insert("c", runs),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
  expect((results[1] as PromiseRejectedResult).reason.status).toBe(409);
  expect((results[2] as PromiseRejectedResult).reason.message).toBe("b refused");
  expect([...runs.values()]).toEqual([1, 1, 1, 1]);
  expect(count("COMMIT")).toBe(1);
  expect(await ids()).toEqual(["a", "c", "taken"]);
});

test("one that fails after writing: the transaction starts over, those before it run again, its row is not kept", async () => {
  const runs = new Map<string, number>();
  const results = await Promise.allSettled([
    insert("a", runs),
    insert("b", runs),
    insert("x", runs, { fail: "after" }),
    insert("c", runs),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect((results[2] as PromiseRejectedResult).reason.message).toBe("x failed after writing");
  expect(Object.fromEntries(runs)).toEqual({ a: 2, b: 2, x: 2, c: 1 });
  // The members after the start over run in savepoints: x rolls back alone the second time.
  expect(count("SAVEPOINT member")).toBe(4);
  expect(count("COMMIT")).toBe(1);
  expect(await ids()).toEqual(["a", "b", "c"]);
});

test("after a member that may not run again, every member runs in a savepoint and none runs twice", async () => {
  const runs = new Map<string, number>();
  const results = await Promise.allSettled([
    insert("a", runs),
    insert("once", runs, { group: false }),
    insert("x", runs, { fail: "after" }),
    insert("c", runs),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect(Object.fromEntries(runs)).toEqual({ a: 1, once: 1, x: 1, c: 1 });
  expect(count("SAVEPOINT member")).toBe(3);
  expect(await ids()).toEqual(["a", "c", "once"]);
});

test("a member's after-commit callbacks run once, after the COMMIT, also when it ran twice", async () => {
  const runs = new Map<string, number>();
  const heard: string[] = [];
  const member = (id: string, fail = false) =>
    db.transaction(async () => {
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await db.run("INSERT INTO items (id) VALUES (?)", [id]);
      db.afterCommit(() => heard.push(id));
      if (fail) throw new Error("late");
    }, { group: true });
  const results = await Promise.allSettled([member("a"), member("x", true), member("b")]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(runs.get("a")).toBe(2);
  expect(heard.sort()).toEqual(["a", "b"]);
});
