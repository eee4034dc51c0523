import { beforeEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { findCollection, saveCollectionRow } from "../../src/catalog/catalog.ts";
import { createCollectionTable } from "../../src/collections/ddl.ts";
import type { Engine, SqlValue } from "../../src/db/engine.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { inTransaction } from "../../src/transaction.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";
import { scratchSqlite } from "../helpers/sqlite-engine.ts";

// The SQLite engine reads on a second, read-only connection while another context's transaction holds
// the writing one: such a read answers at once, sees every commit made before it starts and nothing
// uncommitted. What that must not break: a read after a commit sees it, caches filled by such a read
// (the catalog, counts) are not left stale by a commit that lands meanwhile, a CLI change is seen at the
// next request, schema changes, closing.

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Holds the writing connection with a transaction of its own async context until `g` opens. */
function holdWriter(db: Engine, g: { promise: Promise<void> }): Promise<void> {
  return db.transaction(() => g.promise);
}

/** Runs `read` while another context's transaction holds the writing connection; "still waiting" if it waits for it. */
async function readWhileHeld<T>(db: Engine, read: () => Promise<T>): Promise<T | "still waiting"> {
  const g = gate();
  const held = holdWriter(db, g);
  try {
    return await within(read());
  } finally {
    g.open();
    await held;
  }
}

/** Settles `p` or gives up after `ms`: a read that waits for the writer would otherwise hang the test. */
async function within<T>(p: Promise<T>, ms = 5_000): Promise<T | "still waiting"> {
  let timer!: ReturnType<typeof setTimeout>;
  const late = new Promise<"still waiting">((r) => (timer = setTimeout(() => r("still waiting"), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(onPostgres)("the engine's reading connection", () => {
  const scratch = scratchSqlite("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t (name) VALUES ('a'), ('b'), ('c')");
  let db: SqliteEngine;
  beforeEach(() => {
    db = scratch.db;
  });
  const names = (rows: { name: string }[]) => rows.map((r) => r.name);

  test("a read made while another transaction is open answers at once with committed rows only", async () => {
    const g = gate();
    const tx = db.transaction(async () => {
      await db.run("INSERT INTO t (name) VALUES ('uncommitted')");
      await g.promise;
    });
    const read = await within(db.all<{ name: string }>("SELECT name FROM t ORDER BY id"));
    const one = await within(db.get<{ name: string }>("SELECT name FROM t WHERE name = ?", ["uncommitted"]));
    g.open();
    await tx;
    expect(read === "still waiting" ? read : names(read)).toEqual(["a", "b", "c"]);
    expect(one).toBeNull();
    expect(names(await db.all("SELECT name FROM t ORDER BY id"))).toEqual(["a", "b", "c", "uncommitted"]);
  });

  test("a read started after a commit sees it, also after a read that stopped at its first row", async () => {
    for (let round = 0; round < 3; round++) {
      // `get` of a query with several rows steps once: it must not leave the snapshot open.
      expect(await readWhileHeld(db, () => db.get("SELECT name FROM t ORDER BY id"))).toEqual({ name: "a" });
      const before = await readWhileHeld(db, () => db.all("SELECT name FROM t"));
      await db.transaction(() => db.run("INSERT INTO t (name) VALUES (?)", [`n${round}`]));
      const after = await readWhileHeld(db, () => db.all("SELECT name FROM t"));
      expect(after === "still waiting" || before === "still waiting" ? "still waiting" : after.length - before.length).toBe(1);
    }
  });

  test("a statement kept prepared on the reading connection follows schema changes made by the writer", async () => {
    const star = () => readWhileHeld(db, () => db.get("SELECT * FROM t WHERE id = ?", [1]));
    expect(await star()).toEqual({ id: 1, name: "a" });
    await db.exec("ALTER TABLE t ADD COLUMN extra TEXT DEFAULT 'x'");
    expect(await star()).toEqual({ id: 1, name: "a", extra: "x" });
    await db.exec("DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, other TEXT); INSERT INTO t (other) VALUES ('o')");
    expect(await star()).toEqual({ id: 1, other: "o" });
  });

  test("writes never go to the reading connection: a plain write waits for the open transaction", async () => {
    const g = gate();
    const order: string[] = [];
    const tx = db.transaction(async () => {
      await g.promise;
      order.push("tx");
    });
    const write = db.get<{ id: number }>("INSERT INTO t (name) VALUES ('w') RETURNING id").then(() => order.push("write"));
    const cte = db.all("WITH x AS (SELECT 1) UPDATE t SET name = name || '' WHERE id IN (SELECT * FROM x) RETURNING id").then(() => order.push("cte"));
    expect(await within(db.get("SELECT COUNT(*) AS n FROM t"))).toEqual({ n: 3 });
    g.open();
    await Promise.all([tx, write, cte]);
    expect(order).toEqual(["tx", "write", "cte"]);
  });

  test("close closes both connections: the writer, closing last, removes the WAL", async () => {
    expect(await readWhileHeld(db, () => db.get("SELECT COUNT(*) AS n FROM t"))).toEqual({ n: 3 });
    expect(existsSync(`${scratch.file}-wal`)).toBe(true);
    await db.close();
    expect(existsSync(`${scratch.file}-wal`)).toBe(false);
    scratch.db = new SqliteEngine(openDatabase(scratch.file));
  });

  for (const [what, open] of [
    ["an in-memory database", () => openDatabase(":memory:")],
    ["a database not in WAL mode", () => new Database(join(scratch.dir, "rollback.db"), { create: true, strict: true })],
  ] as const)
    test(`${what} has no second connection: a read waits for the transaction and sees its commit`, async () => {
      const other = new SqliteEngine(open());
      try {
        await other.exec("CREATE TABLE m (v TEXT)");
        const g = gate();
        const tx = other.transaction(async () => {
          await other.run("INSERT INTO m VALUES ('kept')");
          await g.promise;
        });
        const read = other.all("SELECT v FROM m");
        g.open();
        await tx;
        expect(await read).toEqual([{ v: "kept" }]);
      } finally {
        await other.close();
      }
    });
});

describe.skipIf(onPostgres)("caches filled by reads that do not wait for a write", () => {
  const t = appPerTest(async (t) => {
    await createCollection(t, "notes", { read: "public", create: "public", update: "public", delete: "public" });
    for (let i = 0; i < 3; i++) await t.req("POST", "/api/v1/notes", { body: { n: i } });
  });

  test("a collection committed while another request reloaded the catalog is found at the next request", async () => {
    await t.ready;
    const g = gate();
    const saved = gate();
    const now = t.clock.now();
    const creating = inTransaction(t.ctx, async () => {
      await createCollectionTable(t.ctx.db, "late");
      await saveCollectionRow(t.ctx, { name: "late", rules: { read: "public", create: "public", update: "public", delete: "public" }, fieldRules: [], fields: [], indexes: [], fts: { enabled: false, fields: [] }, createdAt: now, updatedAt: now });
      saved.open();
      await g.promise;
    });
    await saved.promise;
    // Another request looks collections up while the change is not committed yet.
    const during = await within(Promise.resolve(findCollection(t.ctx, "late")));
    g.open();
    await creating;
    expect(during).toBeUndefined();
    expect((await t.req("POST", "/api/v1/late", { body: { x: 1 } })).status).toBe(201);
    expect((await t.req("GET", "/api/v1/late")).body.total).toBe(1);
  });

  test("a count that a commit overtakes is answered but not kept: the next total includes that commit", async () => {
    await t.ready;
    const db = t.ctx.db;
    const g = gate();
    const held = holdWriter(db, g);
    // Joins the held transaction: commits when the gate opens.
    const posting = t.req("POST", "/api/v1/notes", { body: { n: 99 } });
    const get = db.get.bind(db);
    let armed = true;
    db.get = (async (sql: string, params?: readonly SqlValue[]) => {
      const row = await get(sql, params);
      if (armed && sql.startsWith("SELECT COUNT(*)")) {
        // The commit lands after the count was read and before it is kept.
        armed = false;
        g.open();
        await held;
        expect((await posting).status).toBe(201);
      }
      return row;
    }) as typeof db.get;
    try {
      const first = await within(t.req("GET", "/api/v1/notes?limit=1"));
      expect(first === "still waiting" ? first : first.body.total).toBe(3);
    } finally {
      db.get = get;
      g.open();
    }
    expect((await t.req("GET", "/api/v1/notes?limit=1")).body.total).toBe(4);
  });

  test("a CLI change is seen by a request that reads while a write transaction holds the database", async () => {
    await t.ready;
    expect((await t.req("GET", "/api/v1/notes?limit=1")).body.total).toBe(3);
    const cli = await runCli(process.execPath, [resolve(import.meta.dir, "../../cli/index.ts"), "--data", t.dir, "collections", "rules", "notes", "--read", "authenticated", "--json"]);
    expect(cli.code).toBe(0);
    const res = await readWhileHeld(t.ctx.db, () => t.req("GET", "/api/v1/notes?limit=1"));
    expect(res === "still waiting" ? res : { status: res.status, code: res.body.code }).toEqual({ status: 401, code: "unauthorized" });
  });
});
