import { afterEach, beforeEach, expect, test } from "bun:test";
import type { SqliteEngine } from "../../src/db/sqlite.ts";
import { itemsEngine } from "../helpers/sqlite-commits.ts";

// A server runs the requests of one event-loop turn one after the other, each to its end when it needs no
// I/O: a create's transaction has finished its work before the next request of the turn starts. The COMMIT
// waits for the end of the turn, so that those requests' transactions join it; their reads (a session
// check) meanwhile do not wait for the open transaction.

let db: SqliteEngine;
let commits: () => number;
let close: () => Promise<void>;

beforeEach(async () => {
  ({ db, commits, close } = await itemsEngine("baas-group-turn-"));
});
afterEach(() => close());

/** Lets every pending microtask run, without ending the event-loop turn. */
async function drainMicrotasks() {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

test("a transaction started later in the same turn, after a read, joins the finished one's COMMIT", async () => {
  const answered: string[] = [];
  const first = db.transaction(() => db.run("INSERT INTO items (id) VALUES ('a')")).then(() => answered.push("a"));
  await drainMicrotasks();
  // The first transaction's work is done; it is not committed yet, and nobody has been answered.
  expect(answered).toEqual([]);
  // The next request of the turn reads first: it answers at once, from committed rows only.
  expect(await db.get("SELECT COUNT(*) AS n FROM items")).toEqual({ n: 0 });
  const second = db.transaction(() => db.run("INSERT INTO items (id) VALUES ('b')")).then(() => answered.push("b"));
  await Promise.all([first, second]);
  expect(answered.sort()).toEqual(["a", "b"]);
  expect(commits()).toBe(1);
  expect(await db.all("SELECT id FROM items ORDER BY id")).toEqual([{ id: "a" }, { id: "b" }]);
});

test("a transaction started in a later turn gets a COMMIT of its own; one alone is committed after its turn", async () => {
  await db.transaction(() => db.run("INSERT INTO items (id) VALUES ('a')"));
  await new Promise((r) => setImmediate(r));
  await db.transaction(() => db.run("INSERT INTO items (id) VALUES ('b')"));
  expect(commits()).toBe(2);
});
