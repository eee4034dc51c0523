import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Engine } from "../../src/db/engine.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { AppError } from "../../src/errors.ts";
import { createTestDatabase, postgresAvailable, startCluster, warnIfSkipped } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

// One set of tests of the storage interface (src/db/engine.ts), run against every engine, so callers can
// count on the same answers whichever engine is under them. Each engine gives its own DDL for the tables
// the tests use; everything else is the same SQL.

interface EngineUnderTest {
  name: string;
  available: boolean;
  /** A fresh, empty database behind a new engine; `onCallbackError` hears after-commit callbacks that threw. */
  open(onCallbackError: (err: unknown) => void): Promise<Engine>;
  /** Nested transactions started together in one transaction each get a savepoint of their own. */
  /** Column types: an integer holding times in ms, a real, a boolean, a blob. */
  types: { int: string; real: string; bool: string; blob: string };
}

const engines: EngineUnderTest[] = [
  {
    name: "sqlite",
    available: true,
    open: async (onCallbackError) => {
      const dir = mkdtempSync(join(tmpdir(), "baas-engine-"));
      const engine = new SqliteEngine(openDatabase(join(dir, "baas.db")), onCallbackError);
      const close = engine.close.bind(engine);
      engine.close = async () => {
        await close();
        rmSync(dir, { recursive: true, force: true });
      };
      return engine;
    },
    types: { int: "integer", real: "real", bool: "integer", blob: "blob" },
  },
  {
    name: "postgres",
    available: postgresAvailable,
    open: async (onCallbackError) => openPostgres({ url: await createTestDatabase(), poolSize: 4, onCallbackError }),
    types: { int: "bigint", real: "double precision", bool: "boolean", blob: "bytea" },
  },
];

warnIfSkipped();

/** A promise and the function that resolves it, to hold a transaction open at a chosen point. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

for (const e of engines) {
  describe.skipIf(!e.available)(`storage engine contract: ${e.name}`, () => {
    let db: Engine;
    const callbackErrors: unknown[] = [];

    beforeAll(async () => {
      db = await e.open((err) => callbackErrors.push(err));
      const t = e.types;
      await db.exec(`
        CREATE TABLE items (id text PRIMARY KEY, n ${t.int}, d ${t.real}, b ${t.bool}, x ${t.blob}, s text);
        CREATE TABLE people (id text PRIMARY KEY, email text NOT NULL UNIQUE);
        CREATE TABLE counters (k text PRIMARY KEY, v ${t.int} NOT NULL);
        CREATE TABLE parents (id text PRIMARY KEY);
        CREATE TABLE children (id text PRIMARY KEY, parent_id text NOT NULL REFERENCES parents (id));
      `);
    });
    afterAll(async () => {
      await db?.close();
    });

    test("run reports the rows it changed; get gives the first row or null; all gives every row", async () => {
      expect(await db.run("INSERT INTO items (id, n) VALUES (?, ?), (?, ?)", ["g1", 1, "g2", 2])).toEqual({ changes: 2 });
      expect(await db.run("UPDATE items SET n = n + 10 WHERE id IN (?, ?)", ["g1", "g2"])).toEqual({ changes: 2 });
      expect(await db.get("SELECT id, n FROM items WHERE id = ?", ["g1"])).toEqual({ id: "g1", n: 11 });
      expect(await db.get("SELECT id FROM items WHERE id = ?", ["none"])).toBeNull();
      expect(await db.all("SELECT id, n FROM items WHERE id LIKE ? ORDER BY id", ["g%"])).toEqual([
        { id: "g1", n: 11 },
        { id: "g2", n: 12 },
      ]);
      expect(await db.run("DELETE FROM items WHERE id LIKE ?", ["g%"])).toEqual({ changes: 2 });
      expect(await db.all("SELECT id FROM items WHERE id LIKE ?", ["g%"])).toEqual([]);
    });

    test("exec runs several statements", async () => {
      await db.exec("CREATE TABLE ex1 (a text); CREATE TABLE ex2 (a text); INSERT INTO ex1 (a) VALUES ('one');");
      expect(await db.all("SELECT a FROM ex1")).toEqual([{ a: "one" }]);
      expect(await db.all("SELECT a FROM ex2")).toEqual([]);
    });

    test("values come back as the same JavaScript values on every engine", async () => {
      const blob = new Uint8Array([0, 1, 2, 255]);
      const json = '{"z":1,"a":[true,null],"s":"é ?"}';
      await db.run("INSERT INTO items (id, n, d, b, x, s) VALUES (?, ?, ?, ?, ?, ?)", ["t1", 1_732_000_000_123, 1.5, true, blob, json]);
      await db.run("INSERT INTO items (id, n, d, b, x, s) VALUES (?, ?, ?, ?, ?, ?)", ["t2", -3, 0, false, null, null]);
      expect(await db.get("SELECT n, d, b, x, s FROM items WHERE id = ?", ["t1"])).toEqual({
        n: 1_732_000_000_123,
        d: 1.5,
        b: 1,
        x: blob,
        s: json,
      });
      expect(await db.get("SELECT n, d, b, x, s FROM items WHERE id = ?", ["t2"])).toEqual({ n: -3, d: 0, b: 0, x: null, s: null });
      // Booleans are written as true/false or 1/0 alike, and compared the same way.
      await db.run("UPDATE items SET b = ? WHERE id = ?", [1, "t2"]);
      expect(await db.all("SELECT id FROM items WHERE b = ? AND id LIKE 't%' ORDER BY id", [true])).toEqual([{ id: "t1" }, { id: "t2" }]);
      expect(await db.get("SELECT COUNT(*) AS c FROM items WHERE id LIKE ?", ["t%"])).toEqual({ c: 2 });
      expect(await db.get("SELECT SUM(n) AS total FROM items WHERE id LIKE ?", ["t%"])).toEqual({ total: 1_732_000_000_120 });
      await db.run("DELETE FROM items WHERE id LIKE ?", ["t%"]);
    });

    test("a ? inside a quoted literal or identifier is not a placeholder", async () => {
      expect(await db.get(`SELECT 'a?b' AS "q?", ? AS v`, ["x"])).toEqual({ "q?": "a?b", v: "x" });
    });

    test("a transaction commits what its function did and gives back its result", async () => {
      const result = await db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", ["c1"]);
        expect(db.inTransaction()).toBe(true);
        return 42;
      });
      expect(result).toBe(42);
      expect(db.inTransaction()).toBe(false);
      expect(await db.get("SELECT id FROM items WHERE id = ?", ["c1"])).toEqual({ id: "c1" });
    });

    test("a transaction whose function throws rolls back everything and rethrows the same error", async () => {
      const boom = new AppError(400, "bad_request", "nope");
      await db.run("INSERT INTO items (id) VALUES (?)", ["rb0"]);
      const err = await rejection(
        db.transaction(async () => {
          await db.run("INSERT INTO items (id) VALUES (?)", ["rb1"]);
          await db.run("UPDATE items SET s = ? WHERE id = ?", ["changed", "rb0"]);
          throw boom;
        }),
      );
      expect(err).toBe(boom);
      expect(await db.get("SELECT id FROM items WHERE id = ?", ["rb1"])).toBeNull();
      expect(await db.get("SELECT s FROM items WHERE id = ?", ["rb0"])).toEqual({ s: null });
    });

    test("a schema change made in a transaction that rolls back does not survive", async () => {
      await rejection(
        db.transaction(async () => {
          await db.exec("CREATE TABLE ghost (id text); ALTER TABLE items ADD COLUMN extra text");
          await db.run("UPDATE items SET extra = ? WHERE id = ?", ["x", "none"]);
          throw new Error("undo");
        }),
      );
      await expect(db.get("SELECT extra FROM items")).rejects.toThrow();
      await expect(db.get("SELECT id FROM ghost")).rejects.toThrow();
      await db.transaction(() => db.exec("ALTER TABLE items ADD COLUMN kept text"));
      expect(await db.get("SELECT kept FROM items WHERE id = ?", ["none"])).toBeNull();
    });

    test("a nested transaction that throws rolls back alone; the outer one goes on and commits", async () => {
      await db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", ["n1"]);
        const err = await rejection(
          db.transaction(async () => {
            await db.run("INSERT INTO items (id) VALUES (?)", ["n2"]);
            await db.transaction(async () => db.run("INSERT INTO items (id) VALUES (?)", ["n3"]));
            throw new Error("inner");
          }),
        );
        expect(err.message).toBe("inner");
        await db.transaction(async () => db.run("INSERT INTO items (id) VALUES (?)", ["n4"]));
      });
      expect(await db.all("SELECT id FROM items WHERE id LIKE 'n%' ORDER BY id")).toEqual([{ id: "n1" }, { id: "n4" }]);
    });

    test("nested transactions started together in one transaction each keep their own savepoint", async () => {
      await db.transaction(async () => {
        await Promise.all([
          db.transaction(async () => db.run("INSERT INTO items (id) VALUES (?)", ["p1"])),
          rejection(
            db.transaction(async () => {
              await db.run("INSERT INTO items (id) VALUES (?)", ["p2"]);
              throw new Error("second fails");
            }),
          ),
          db.transaction(async () => db.run("INSERT INTO items (id) VALUES (?)", ["p3"])),
        ]);
      });
      expect(await db.all("SELECT id FROM items WHERE id LIKE 'p%' ORDER BY id")).toEqual([{ id: "p1" }, { id: "p3" }]);
    });

    test("another async context never sees, nor joins, a transaction that is still open", async () => {
      const holding = gate();
      const inserted = gate();
      const tx = db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", ["iso1"]);
        inserted.open();
        await holding.promise;
        throw new Error("roll back");
      });
      await inserted.promise;
      expect(db.inTransaction()).toBe(false);
      // Started while the transaction is open: it must not see the row, which is about to be rolled back.
      const read = db.get("SELECT id FROM items WHERE id = ?", ["iso1"]);
      const write = db.run("INSERT INTO items (id) VALUES (?)", ["iso2"]);
      holding.open();
      expect((await rejection(tx)).message).toBe("roll back");
      expect(await read).toBeNull();
      await write;
      // The write of the other context was its own: the rollback did not take it.
      expect(await db.all("SELECT id FROM items WHERE id IN (?, ?) ORDER BY id", ["iso1", "iso2"])).toEqual([{ id: "iso2" }]);
    });

    test("a statement that outlives its transaction (a promise not awaited) runs on its own", async () => {
      const later = gate();
      let leftBehind!: Promise<unknown>;
      await db.transaction(async () => {
        leftBehind = later.promise.then(() => db.run("INSERT INTO items (id) VALUES (?)", ["late1"]));
        await db.run("INSERT INTO items (id) VALUES (?)", ["late0"]);
      });
      later.open();
      await leftBehind;
      expect(await db.all("SELECT id FROM items WHERE id LIKE 'late%' ORDER BY id")).toEqual([{ id: "late0" }, { id: "late1" }]);
    });

    test("concurrent read-modify-write transactions lose no update", async () => {
      await db.run("INSERT INTO counters (k, v) VALUES (?, ?)", ["rmw", 0]);
      const n = 8;
      await Promise.all(
        Array.from({ length: n }, () =>
          db.transaction(async () => {
            const row = await db.get<{ v: number }>("SELECT v FROM counters WHERE k = ?", ["rmw"]);
            await Promise.resolve();
            await db.run("UPDATE counters SET v = ? WHERE k = ?", [row!.v + 1, "rmw"]);
          }),
        ),
      );
      expect(await db.get("SELECT v FROM counters WHERE k = ?", ["rmw"])).toEqual({ v: n });
    });

    test("a limit checked and then taken in one transaction holds under concurrency (count, then insert)", async () => {
      await db.exec("CREATE TABLE attempts (id text PRIMARY KEY, ip text NOT NULL)");
      const limit = 3;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          db.transaction(async () => {
            const row = await db.get<{ c: number }>("SELECT COUNT(*) AS c FROM attempts WHERE ip = ?", ["10.0.0.1"]);
            await Promise.resolve();
            if (row!.c >= limit) return "refused";
            await db.run("INSERT INTO attempts (id, ip) VALUES (?, ?)", [`a${i}`, "10.0.0.1"]);
            return "taken";
          }),
        ),
      );
      expect(results.filter((r) => r === "taken").length).toBe(limit);
      expect(await db.get("SELECT COUNT(*) AS c FROM attempts")).toEqual({ c: limit });
    });

    test("afterCommit runs after the outermost commit only, never after a rollback", async () => {
      const seen: string[] = [];
      db.afterCommit(() => seen.push("outside"));
      expect(seen).toEqual(["outside"]);
      await db.transaction(async () => {
        db.afterCommit(() => seen.push("outer"));
        await db.transaction(async () => {
          db.afterCommit(() => seen.push("inner kept"));
        });
        await rejection(
          db.transaction(async () => {
            db.afterCommit(() => seen.push("inner rolled back"));
            throw new Error("x");
          }),
        );
        expect(seen).toEqual(["outside"]);
      });
      expect(seen).toEqual(["outside", "outer", "inner kept"]);
      await rejection(
        db.transaction(async () => {
          db.afterCommit(() => seen.push("never"));
          throw new Error("y");
        }),
      );
      expect(seen).toEqual(["outside", "outer", "inner kept"]);
    });

    test("an afterCommit callback that throws neither fails nor undoes the commit, and the next callbacks run", async () => {
      const seen: string[] = [];
      const result = await db.transaction(async () => {
        await db.run("INSERT INTO items (id) VALUES (?)", ["cb1"]);
        db.afterCommit(() => {
          throw new Error("callback failed");
        });
        db.afterCommit(() => seen.push("next"));
        return "done";
      });
      expect(result).toBe("done");
      expect(seen).toEqual(["next"]);
      expect(callbackErrors.map((err) => (err as Error).message)).toEqual(["callback failed"]);
      expect(await db.get("SELECT id FROM items WHERE id = ?", ["cb1"])).toEqual({ id: "cb1" });
    });

    test("a missing or still referenced related row is 409 conflict; a missing required value is 422 required", async () => {
      const missing = await rejection(db.run("INSERT INTO children (id, parent_id) VALUES (?, ?)", ["c1", "nobody"]));
      expect(missing).toBeInstanceOf(AppError);
      expect({ status: missing.status, body: missing.body() }).toEqual({
        status: 409,
        body: { error: "a related record is missing or still referenced", code: "conflict" },
      });
      await db.run("INSERT INTO parents (id) VALUES (?)", ["p1"]);
      await db.run("INSERT INTO children (id, parent_id) VALUES (?, ?)", ["c1", "p1"]);
      const referenced = await rejection(db.transaction(() => db.run("DELETE FROM parents WHERE id = ?", ["p1"])));
      expect({ status: referenced.status, code: referenced.code }).toEqual({ status: 409, code: "conflict" });
      const required = await rejection(db.run("INSERT INTO children (id, parent_id) VALUES (?, ?)", ["c2", null]));
      expect({ status: required.status, body: required.body() }).toEqual({
        status: 422,
        body: { errors: [{ field: "parent_id", rule: "required", message: '"parent_id" is required.' }] },
      });
      expect(await db.all("SELECT id FROM children")).toEqual([{ id: "c1" }]);
    });

    test("a unique violation is 409 unique_violation naming the field, inside a transaction or not", async () => {
      await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u1", "a@example.com"]);
      const outside = await rejection(db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u2", "a@example.com"]));
      expect(outside).toBeInstanceOf(AppError);
      expect({ status: outside.status, body: outside.body() }).toEqual({
        status: 409,
        body: { error: "a record with the same email already exists", code: "unique_violation", fields: ["email"] },
      });
      const inside = await rejection(db.transaction(() => db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u3", "a@example.com"])));
      expect({ status: inside.status, code: inside.code, fields: inside.extra.fields }).toEqual({ status: 409, code: "unique_violation", fields: ["email"] });
      expect(await db.get("SELECT COUNT(*) AS c FROM people")).toEqual({ c: 1 });
    });
  });
}

// What only an engine with a server can show: retries of conflicting transactions, a statement timeout,
// and a database that goes away and comes back.
describe.skipIf(!postgresAvailable)("storage engine contract: postgres server", () => {
  test("a serialization failure runs the whole transaction again, a bounded number of times", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 6 });
    try {
      await db.exec("CREATE TABLE counters (k text PRIMARY KEY, v bigint NOT NULL); INSERT INTO counters VALUES ('c', 0);");
      const n = 4;
      let calls = 0;
      let read = 0;
      const allRead = gate();
      await Promise.all(
        Array.from({ length: n }, () =>
          db.transaction(async () => {
            calls++;
            const row = await db.get<{ v: number }>("SELECT v FROM counters WHERE k = 'c'");
            // First tries only: every transaction reads before any writes, so all but one must fail.
            if (calls <= n && ++read === n) allRead.open();
            if (calls <= n) await allRead.promise;
            await db.run("UPDATE counters SET v = ? WHERE k = 'c'", [row!.v + 1]);
          }),
        ),
      );
      expect(await db.get("SELECT v FROM counters")).toEqual({ v: n });
      expect(calls).toBeGreaterThan(n);

      // Past the bound the conflict is answered 503 busy.
      const strict = openPostgres({ url: await createTestDatabase(), poolSize: 4, maxRetries: 0 });
      try {
        await strict.exec("CREATE TABLE counters (k text PRIMARY KEY, v bigint NOT NULL); INSERT INTO counters VALUES ('c', 0);");
        const both = gate();
        let reads = 0;
        const results = await Promise.allSettled(
          [0, 1].map(() =>
            strict.transaction(async () => {
              const row = await strict.get<{ v: number }>("SELECT v FROM counters WHERE k = 'c'");
              if (++reads === 2) both.open();
              await both.promise;
              await strict.run("UPDATE counters SET v = ? WHERE k = 'c'", [row!.v + 1]);
            }),
          ),
        );
        const failed = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason);
        expect(failed.length).toBe(1);
        expect({ status: failed[0].status, code: failed[0].code }).toEqual({ status: 503, code: "busy" });
      } finally {
        await strict.close();
      }
    } finally {
      await db.close();
    }
  });

  test("a failed statement whose error the transaction swallowed fails the commit: nothing is reported saved that was not", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 2 });
    try {
      await db.exec("CREATE TABLE people (id text PRIMARY KEY, email text NOT NULL UNIQUE); INSERT INTO people VALUES ('u1', 'a@example.com');");
      const err = await rejection(
        db.transaction(async () => {
          await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u2", "b@example.com"]);
          await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u3", "a@example.com"]).catch(() => {});
        }),
      );
      expect({ status: err.status, code: err.code, fields: err.extra.fields }).toEqual({ status: 409, code: "unique_violation", fields: ["email"] });
      expect(await db.all("SELECT id FROM people ORDER BY id")).toEqual([{ id: "u1" }]);
      // A statement refused because of the earlier failure reports that failure, not "transaction aborted".
      const later = await rejection(
        db.transaction(async () => {
          await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u3", "a@example.com"]).catch(() => {});
          await db.transaction(() => db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u4", "d@example.com"]));
        }),
      );
      expect({ status: later.status, code: later.code }).toEqual({ status: 409, code: "unique_violation" });
      const plain = await rejection(
        db.transaction(async () => {
          await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u3", "a@example.com"]).catch(() => {});
          await db.get("SELECT 1 AS one");
        }),
      );
      expect({ status: plain.status, code: plain.code }).toEqual({ status: 409, code: "unique_violation" });
      // In a nested transaction the failure rolls back alone, and the rest commits (as on every engine).
      await db.transaction(async () => {
        await db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u2", "b@example.com"]);
        await db.transaction(() => db.run("INSERT INTO people (id, email) VALUES (?, ?)", ["u3", "a@example.com"])).catch(() => {});
      });
      expect(await db.all("SELECT id FROM people ORDER BY id")).toEqual([{ id: "u1" }, { id: "u2" }]);
    } finally {
      await db.close();
    }
  });

  test("more transactions than pooled connections wait their turn, and plain statements still get through", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 2 });
    try {
      await db.exec("CREATE TABLE rows (id text PRIMARY KEY)");
      const n = 12;
      const all = await Promise.all([
        ...Array.from({ length: n }, (_, i) =>
          db.transaction(async () => {
            await db.run("INSERT INTO rows (id) VALUES (?)", [`r${i}`]);
            return db.get<{ c: number }>("SELECT COUNT(*) AS c FROM rows WHERE id = ?", [`r${i}`]);
          }),
        ),
        db.get("SELECT 1 AS plain"),
      ]);
      expect(all.slice(0, n)).toEqual(Array.from({ length: n }, () => ({ c: 1 })));
      expect(await db.get("SELECT COUNT(*) AS c FROM rows")).toEqual({ c: n });
    } finally {
      await db.close();
    }
  });

  test("a value PostgreSQL cannot store is 400 bad_request, never a 500", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 1 });
    try {
      await db.exec("CREATE TABLE t (id text, n bigint)");
      // A bound NUL is escaped by the engine and read back as sent; one written into the SQL text itself is refused.
      await db.run("INSERT INTO t (id) VALUES (?)", ["a\u0000b"]);
      expect(await db.get("SELECT id FROM t")).toEqual({ id: "a\u0000b" });
      const nul = await rejection(db.run("INSERT INTO t (id) VALUES (chr(0))"));
      expect(nul.status).toBe(400);
      const fraction = await rejection(db.run("INSERT INTO t (n) VALUES (?)", [1.5]));
      expect({ status: fraction.status, body: fraction.body() }).toEqual({
        status: 400,
        body: { error: "a value does not fit the type of its column", code: "bad_request" },
      });
    } finally {
      await db.close();
    }
  });

  test("a database that does not exist, or a refused login, is 503 unavailable", async () => {
    const url = new URL(await createTestDatabase());
    const noDb = new URL(url);
    noDb.pathname = "/no_such_database";
    const noUser = new URL(url);
    noUser.username = "nobody";
    const wrongDb = openPostgres({ url: noDb.toString(), poolSize: 1 });
    const wrongUser = openPostgres({ url: noUser.toString(), poolSize: 1 });
    try {
      for (const db of [wrongDb, wrongUser]) {
        const err = await rejection(db.get("SELECT 1 AS one"));
        expect({ status: err.status, code: err.code }).toEqual({ status: 503, code: "unavailable" });
      }
    } finally {
      await wrongDb.close();
      await wrongUser.close();
    }
  });

  test("a statement given more or fewer values than it has placeholders is refused", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 1 });
    try {
      await expect(db.get("SELECT ? AS v", [])).rejects.toThrow("the statement has 1 placeholders but 0 values were given");
      await expect(db.get("SELECT 1 AS v", [1])).rejects.toThrow("the statement has 0 placeholders but 1 values were given");
    } finally {
      await db.close();
    }
  });

  test("a statement over the statement timeout is 503 unavailable, and the connection serves the next one", async () => {
    const db = openPostgres({ url: await createTestDatabase(), poolSize: 1, statementTimeoutMs: 200 });
    try {
      const err = await rejection(db.get("SELECT pg_sleep(5)"));
      expect(err).toBeInstanceOf(AppError);
      expect({ status: err.status, code: err.code }).toEqual({ status: 503, code: "unavailable" });
      expect(await db.get("SELECT CAST(? AS bigint) AS one", [1])).toEqual({ one: 1 });
    } finally {
      await db.close();
    }
  });

  test("a stopped database server is 503 unavailable, and the same engine recovers when it is back", async () => {
    const cluster = await startCluster();
    const db = openPostgres({ url: await cluster.createDatabase(), poolSize: 3, connectTimeoutS: 2 });
    try {
      await db.exec("CREATE TABLE kept (id text PRIMARY KEY)");
      await db.run("INSERT INTO kept (id) VALUES (?)", ["before"]);
      // A transaction open when the server goes away is not saved, and says so.
      const holding = gate();
      const inserted = gate();
      const inFlight = rejection(
        db.transaction(async () => {
          await db.run("INSERT INTO kept (id) VALUES (?)", ["in-flight"]);
          inserted.open();
          await holding.promise;
          await db.run("INSERT INTO kept (id) VALUES (?)", ["in-flight-2"]);
        }),
      );
      await inserted.promise;
      cluster.stop();
      holding.open();
      expect((await inFlight).status).toBe(503);
      for (const attempt of [
        () => db.get("SELECT id FROM kept"),
        () => db.run("INSERT INTO kept (id) VALUES (?)", ["during"]),
        () => db.transaction(() => db.run("INSERT INTO kept (id) VALUES (?)", ["during-tx"])),
      ]) {
        const err = await rejection(attempt());
        expect(err).toBeInstanceOf(AppError);
        expect({ status: err.status, body: err.body() }).toEqual({
          status: 503,
          body: { error: "the database is unavailable, try again", code: "unavailable" },
        });
      }
      cluster.start();
      const rows = await waitFor(
        async () => {
          try {
            return await db.all("SELECT id FROM kept ORDER BY id");
          } catch {
            return null;
          }
        },
        { timeoutMs: 30_000 },
      );
      expect(rows).toEqual([{ id: "before" }]);
      await db.transaction(() => db.run("INSERT INTO kept (id) VALUES (?)", ["after"]));
      expect(await db.all("SELECT id FROM kept ORDER BY id")).toEqual([{ id: "after" }, { id: "before" }]);
    } finally {
      await db.close();
      cluster.destroy();
    }
  });
});
