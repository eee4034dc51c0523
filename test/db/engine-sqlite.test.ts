import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { AppError } from "../../src/errors.ts";
import { scratchSqlite } from "../helpers/sqlite-engine.ts";

const scratch = scratchSqlite("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER)");
let db: SqliteEngine;
beforeEach(() => {
  db = scratch.db;
});

const names = async () => (await db.all<{ name: string }>("SELECT name FROM t ORDER BY id")).map((r) => r.name);

describe("statements", () => {
  test("get, all, run and exec with ? placeholders", async () => {
    expect(await db.run("INSERT INTO t (name, n) VALUES (?, ?)", ["a", 1])).toEqual({ changes: 1 });
    await db.run("INSERT INTO t (name, n) VALUES (?, ?)", ["b", 2]);
    expect(await db.get("SELECT name, n FROM t WHERE name = ?", ["b"])).toEqual({ name: "b", n: 2 });
    expect(await db.get("SELECT name FROM t WHERE name = ?", ["zz"])).toBeNull();
    expect(await db.all("SELECT name FROM t ORDER BY id")).toEqual([{ name: "a" }, { name: "b" }]);
    expect(await db.run("UPDATE t SET n = n + 1", [])).toEqual({ changes: 2 });
    await db.exec("CREATE TABLE u (x TEXT); INSERT INTO u VALUES ('one')");
    expect(await db.get("SELECT x FROM u")).toEqual({ x: "one" });
  });

  test("a unique violation is a 409 unique_violation; a syntax error rejects (never throws synchronously)", async () => {
    await db.run("INSERT INTO t (name) VALUES (?)", ["a"]);
    const err = await db.run("INSERT INTO t (name) VALUES (?)", ["a"]).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(409);
    const p = db.get("SELEC nonsense");
    expect(p).toBeInstanceOf(Promise);
    expect(await p.catch((e) => e)).toBeInstanceOf(Error);
  });
});

describe("transactions", () => {
  test("commit keeps the writes; a throw rolls them all back and rejects with the error", async () => {
    expect(await db.transaction(async () => {
      await db.run("INSERT INTO t (name) VALUES ('a')");
      expect(db.inTransaction()).toBe(true);
      return 7;
    })).toBe(7);
    expect(db.inTransaction()).toBe(false);
    const boom = new Error("boom");
    const err = await db
      .transaction(async () => {
        await db.run("INSERT INTO t (name) VALUES ('b')");
        await db.run("INSERT INTO t (name) VALUES ('c')");
        throw boom;
      })
      .catch((e) => e);
    expect(err).toBe(boom);
    expect(await names()).toEqual(["a"]);
  });

  test("a nested transaction is a savepoint: its failure rolls back only its own writes", async () => {
    await db.transaction(async () => {
      await db.run("INSERT INTO t (name) VALUES ('outer1')");
      await db
        .transaction(async () => {
          await db.run("INSERT INTO t (name) VALUES ('inner')");
          throw new Error("inner fails");
        })
        .catch(() => {});
      await db.transaction(async () => {
        await db.run("INSERT INTO t (name) VALUES ('inner-ok')");
      });
      await db.run("INSERT INTO t (name) VALUES ('outer2')");
    });
    expect(await names()).toEqual(["outer1", "inner-ok", "outer2"]);
  });

  test("statements made in what the transaction awaits (after a timer) join it", async () => {
    const err = await db
      .transaction(async () => {
        await new Promise((r) => setTimeout(r, 1));
        await Promise.all([db.run("INSERT INTO t (name) VALUES ('x')"), db.run("INSERT INTO t (name) VALUES ('y')")]);
        throw new Error("undo");
      })
      .catch((e) => e);
    expect(err.message).toBe("undo");
    expect(await names()).toEqual([]);
  });

  test("two concurrent transactions do not interleave; a plain read of another context answers from committed rows, a plain write waits", async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = db.transaction(async () => {
      order.push("first:start");
      await db.run("INSERT INTO t (name, n) VALUES ('first', 1)");
      await gate;
      order.push("first:end");
      throw new Error("first rolls back");
    });
    const second = db.transaction(async () => {
      order.push("second:start");
      await db.run("INSERT INTO t (name, n) VALUES ('second', 2)");
      order.push("second:end");
    });
    // Outside both: must not see the uncommitted 'first' row nor run inside its transaction. The read does
    // not wait (it runs on the reading connection); the write does.
    const plainRead = db.all<{ name: string }>("SELECT name FROM t").then((rows) => {
      order.push(`read:${rows.map((r) => r.name).join(",")}`);
    });
    const plainWrite = db.run("INSERT INTO t (name, n) VALUES ('plain', 3)").then(() => order.push("plain-write"));
    // Let every queued microtask and timer run while the first transaction holds the connection.
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual(["first:start", "read:"]);
    release();
    expect(await first.catch((e) => e.message)).toBe("first rolls back");
    await Promise.all([second, plainRead, plainWrite]);
    expect(order).toEqual(["first:start", "read:", "first:end", "second:start", "second:end", "plain-write"]);
    expect(await names()).toEqual(["second", "plain"]);
  });

  test("two engines of one process on the same file wait for each other instead of failing busy", async () => {
    const second = new SqliteEngine(openDatabase(scratch.file));
    try {
      const order: string[] = [];
      const first = db.transaction(async () => {
        await db.run("INSERT INTO t (name) VALUES ('from-first')");
        // Stays open across event-loop turns, as a transaction awaiting other work does.
        await new Promise((r) => setTimeout(r, 20));
        order.push("first-commits");
      });
      const write = second.run("INSERT INTO t (name) VALUES ('from-second')").then(() => order.push("second-writes"));
      const tx = await second.transaction(async () => {
        await second.run("UPDATE t SET n = 1");
        order.push("second-tx");
      });
      await Promise.all([first, write, tx]);
      expect(order).toEqual(["first-commits", "second-writes", "second-tx"]);
      expect(await names()).toEqual(["from-first", "from-second"]);
    } finally {
      await second.close();
    }
  });

  test("afterCommit runs after the outermost commit only, never for a rolled-back transaction or savepoint", async () => {
    const seen: string[] = [];
    await db.transaction(async () => {
      db.afterCommit(() => seen.push("outer"));
      await db.transaction(async () => {
        db.afterCommit(() => seen.push("nested-ok"));
      });
      await db
        .transaction(async () => {
          db.afterCommit(() => seen.push("nested-failed"));
          throw new Error("x");
        })
        .catch(() => {});
      // Still inside: nothing has run yet.
      expect(seen).toEqual([]);
      const inside = await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM t");
      expect(inside).toEqual({ n: 0 });
    });
    expect(seen).toEqual(["outer", "nested-ok"]);
    await db
      .transaction(async () => {
        db.afterCommit(() => seen.push("rolled-back"));
        throw new Error("y");
      })
      .catch(() => {});
    expect(seen).toEqual(["outer", "nested-ok"]);
    db.afterCommit(() => seen.push("outside"));
    expect(seen).toEqual(["outer", "nested-ok", "outside"]);
  });

  test("an after-commit callback that throws is reported; the commit and the others stand", async () => {
    const errors: unknown[] = [];
    const own = new SqliteEngine(openDatabase(join(scratch.dir, "other.db")), (e) => errors.push(e));
    await own.exec("CREATE TABLE k (v TEXT)");
    const seen: string[] = [];
    const result = await own.transaction(async () => {
      await own.run("INSERT INTO k VALUES ('v')");
      own.afterCommit(() => {
        throw new Error("listener");
      });
      own.afterCommit(() => seen.push("second"));
      return "done";
    });
    expect(result).toBe("done");
    expect(seen).toEqual(["second"]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["listener"]);
    expect(await own.get("SELECT v FROM k")).toEqual({ v: "v" });
    await own.close();
  });
});
