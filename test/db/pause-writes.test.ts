import { beforeEach, expect, test } from "bun:test";
import type { SqliteEngine } from "../../src/db/sqlite.ts";
import { countCommits, scratchSqlite } from "../helpers/sqlite-engine.ts";

// SqliteEngine.pauseWrites: the checkpoint worker's moment without writes. It starts after the write
// transaction running now has committed; reads go on meanwhile; transactions started meanwhile wait, then
// run together in one group, each still in its own savepoint. About the SQLite engine only.

const scratch = scratchSqlite("CREATE TABLE items (id TEXT PRIMARY KEY)");
let db: SqliteEngine;
let commits: () => number;
beforeEach(() => {
  db = scratch.db;
  commits = countCommits(db);
});

/** A pause whose end the test decides; `started` resolves once it holds the writes. */
function pause() {
  let end!: () => void;
  let started!: () => void;
  const holding = new Promise<void>((r) => (started = r));
  const over = db.pauseWrites(
    () =>
      new Promise<void>((r) => {
        end = r;
        started();
      }),
  );
  return { holding, over, end: () => end() };
}

test("transactions started during a pause wait for its end, then share one COMMIT; a failing one fails alone", async () => {
  const p = pause();
  await p.holding;
  const answered: string[] = [];
  const a = db.transaction(() => db.run("INSERT INTO items (id) VALUES ('a')")).then(() => answered.push("a"));
  const dup = db.transaction(() => db.run("INSERT INTO items (id) VALUES ('a')")).then(
    () => null,
    (err: unknown) => err,
  );
  const b = db.transaction(() => db.run("INSERT INTO items (id) VALUES ('b')")).then(() => answered.push("b"));
  const plain = db.run("INSERT INTO items (id) VALUES ('c')").then(() => answered.push("c"));
  // Several turns go by: nothing is written while the pause lasts, reads are answered.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  expect(answered).toEqual([]);
  expect(await db.get("SELECT COUNT(*) AS n FROM items")).toEqual({ n: 0 });
  expect(commits()).toBe(0);
  p.end();
  await p.over;
  await Promise.all([a, b, plain]);
  expect(await dup).toMatchObject({ code: "unique_violation" });
  expect(answered.sort()).toEqual(["a", "b", "c"]);
  expect(await db.all("SELECT id FROM items ORDER BY id")).toEqual([{ id: "a" }, { id: "b" }, { id: "c" }]);
  // a, the failed duplicate and b in one group (c, a plain write, after it, outside any transaction).
  expect(commits()).toBe(1);
});

test("a pause starts only once the write transaction running has committed", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const tx = db.transaction(async () => {
    await db.run("INSERT INTO items (id) VALUES ('a')");
    await gate;
  });
  let paused = false;
  const over = db.pauseWrites(async () => {
    paused = true;
    // What a pause sees: the transaction before it committed.
    expect(await db.get("SELECT COUNT(*) AS n FROM items")).toEqual({ n: 1 });
  });
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  expect(paused).toBe(false);
  release();
  await tx;
  await over;
  expect(paused).toBe(true);
});

test("a pause with no transaction waiting leaves the engine free for the next write", async () => {
  await db.pauseWrites(async () => {});
  await db.transaction(() => db.run("INSERT INTO items (id) VALUES ('a')"));
  await db.run("INSERT INTO items (id) VALUES ('b')");
  expect(await db.get("SELECT COUNT(*) AS n FROM items")).toEqual({ n: 2 });
});
