import { beforeEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { MAX_STATEMENTS } from "../../src/db/statements.ts";
import { onPostgres } from "../helpers/engine.ts";
import { scratchSqlite } from "../helpers/sqlite-engine.ts";

// `getBatched` (the read of one record by id): once a turn has held two or more of them, the reads asked in
// one event-loop turn run together at its end, in one read transaction on the reading connection; a turn
// with a single one turns that off again (reads run at once). Each must still see every commit made before
// it was asked, a transaction's own uncommitted writes inside it, and fail alone.

describe.skipIf(onPostgres)("reads batched per event-loop turn", () => {
  const scratch = scratchSqlite("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t (name) VALUES ('a'), ('b'), ('c')");
  let db: SqliteEngine;
  beforeEach(() => {
    db = scratch.db;
  });
  const byId = (id: number) => db.getBatched<{ name: string }>("SELECT name FROM t WHERE id = ?", [id]);
  const turnEnd = () => new Promise((r) => setImmediate(r));
  /** A turn with two reads: the reads of the turns after it are batched. */
  const busyTurn = async () => {
    await Promise.all([byId(1), byId(2)]);
    await turnEnd();
  };

  test("reads of one turn answer each their own row, a missing one null, run at once or batched", async () => {
    for (let round = 0; round < 3; round++) {
      expect(await Promise.all([byId(1), byId(2), byId(9), byId(3)])).toEqual([{ name: "a" }, { name: "b" }, null, { name: "c" }]);
      await turnEnd();
    }
    expect(await byId(2)).toEqual({ name: "b" });
  });

  test("a read sees what was committed before it was asked, by this engine and by another connection", async () => {
    await db.run("INSERT INTO t (id, name) VALUES (10, 'mine')");
    const other = new Database(scratch.file);
    try {
      other.run("INSERT INTO t (id, name) VALUES (11, 'theirs')");
      expect(await Promise.all([byId(10), byId(11)])).toEqual([{ name: "mine" }, { name: "theirs" }]);
      // Batched, asked in the same turn as the other connection's commit, before it: answered from a
      // snapshot taken at the end of the turn.
      await busyTurn();
      const early = Promise.all([byId(12), byId(1)]);
      other.run("INSERT INTO t (id, name) VALUES (12, 'later')");
      expect(await early).toEqual([{ name: "later" }, { name: "a" }]);
      // That turn held two reads: batching goes on. A turn of one read turns it off: the next one runs at once.
      expect(await byId(1)).toEqual({ name: "a" });
      await turnEnd();
      const now = byId(13);
      other.run("INSERT INTO t (id, name) VALUES (13, 'after')");
      expect(await now).toBeNull();
    } finally {
      other.close();
    }
  });

  test("inside a transaction the read runs in it and sees its uncommitted writes; outside it does not", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let inside: unknown;
    await busyTurn();
    const tx = db.transaction(async () => {
      await db.run("INSERT INTO t (id, name) VALUES (20, 'uncommitted')");
      inside = await byId(20);
      await gate;
    });
    while (inside === undefined) await new Promise((r) => setImmediate(r));
    expect(inside).toEqual({ name: "uncommitted" });
    expect(await byId(20)).toBeNull();
    open();
    await tx;
    expect(await byId(20)).toEqual({ name: "uncommitted" });
  });

  test("a read that fails fails alone; the others of its turn answer", async () => {
    await busyTurn();
    const results = await Promise.allSettled([byId(1), db.getBatched("SELECT name FROM missing WHERE id = ?", [1]), byId(2)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await byId(3)).toEqual({ name: "c" });
  });

  test("reads waiting for the end of the turn answer though other reads meanwhile overflow the reading connection's statement cache", async () => {
    await busyTurn();
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let holding = false;
    // While a write transaction holds the writing connection, other reads run on the reading one.
    const tx = db.transaction(async () => {
      holding = true;
      await gate;
    });
    while (!holding) await turnEnd();
    const waiting = Promise.allSettled([byId(1), byId(2)]);
    const lists: Promise<unknown>[] = [];
    for (let i = 0; i <= MAX_STATEMENTS; i++) lists.push(db.all(`SELECT name FROM t WHERE id = ? -- list ${i}`, [3]));
    const results = await waiting;
    open();
    await tx;
    expect(results).toEqual([
      { status: "fulfilled", value: { name: "a" } },
      { status: "fulfilled", value: { name: "b" } },
    ]);
    expect(await Promise.all(lists.slice(-2))).toEqual([[{ name: "c" }], [{ name: "c" }]]);
    expect(await Promise.all([byId(1), byId(3)])).toEqual([{ name: "a" }, { name: "c" }]);
  });

  test("reads still waiting when the engine closes fail", async () => {
    await busyTurn();
    const waiting = Promise.allSettled([byId(1), byId(2)]);
    await db.close();
    expect((await waiting).map((r) => r.status)).toEqual(["rejected", "rejected"]);
    scratch.db = new SqliteEngine(openDatabase(scratch.file));
  });

  test("a statement that writes is not batched: it runs on the writing connection", async () => {
    const row = await db.getBatched<{ id: number }>("INSERT INTO t (name) VALUES ('w') RETURNING id");
    expect(await byId(row!.id)).toEqual({ name: "w" });
  });
});
