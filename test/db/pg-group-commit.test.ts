import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { inTransaction } from "../../src/transaction.ts";
import { noteHooksChanged } from "../../src/catalog/catalog.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { onPostgres, runElsewhere } from "../helpers/engine.ts";
import { columnNames } from "../helpers/schema.ts";

// Group commit on PostgreSQL: transactions that allow it (`group`, a create without create hooks) and start
// together share one PostgreSQL transaction and one COMMIT. Each is answered, and its after-commit
// callbacks run, only after that COMMIT; a member that fails after sending a statement rolls the shared
// transaction back and every member runs again in a transaction of its own, so each gets the answer it
// would have had alone. SQLite groups every transaction already (test/db/group-commit.test.ts).

const N = 10;

describe.skipIf(!onPostgres)("group commit on PostgreSQL", () => {
  let t: TestApp;
  beforeEach(async () => {
    t = createTestApp();
    await t.ready;
    await t.db.exec("CREATE TABLE gc (k text PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current())");
    await t.db.exec("CREATE TABLE gc_side (k text PRIMARY KEY)");
  });
  afterEach(() => t.close());

  /** Starts `n` grouped transactions in one turn, as requests handled together start them. */
  function together<T>(n: number, fn: (i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
    return Promise.allSettled(Array.from({ length: n }, (_, i) => t.db.transaction(() => fn(i), { group: true })));
  }

  const keys = async (table = "gc") => (await t.db.all<{ k: string }>(`SELECT k FROM ${table} ORDER BY k`)).map((r) => r.k);

  test("transactions started together share one PostgreSQL transaction; without the option each has its own", async () => {
    const grouped = await together(N, async (i) => {
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [`g${i}`]);
      return (await t.db.get<{ x: number }>("SELECT txid_current() AS x"))!.x;
    });
    expect(grouped.every((r) => r.status === "fulfilled")).toBe(true);
    expect(new Set(grouped.map((r) => (r as PromiseFulfilledResult<number>).value)).size).toBe(1);
    const alone = await Promise.all(Array.from({ length: N }, () => t.db.transaction(async () => (await t.db.get<{ x: number }>("SELECT txid_current() AS x"))!.x)));
    expect(new Set(alone).size).toBe(N);
    expect((await keys()).length).toBe(N);
  });

  test("one member's unique violation fails that member only: the others commit, nothing of the failed one stays", async () => {
    await t.db.run("INSERT INTO gc (k) VALUES ('taken')");
    const runs = new Array(N).fill(0);
    const results = await together(N, async (i) => {
      runs[i]++;
      // The failing member writes first, then fails: its first write must not stay either.
      await t.db.run("INSERT INTO gc_side (k) VALUES (?)", [`side${i}`]);
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [i === 5 ? "taken" : `k${i}`]);
      return i;
    });
    expect(results.map((r) => r.status)).toEqual(results.map((_, i) => (i === 5 ? "rejected" : "fulfilled")));
    expect((results[5] as PromiseRejectedResult).reason).toMatchObject({ status: 409, code: "unique_violation" });
    expect(await keys()).toEqual([...Array.from({ length: N }, (_, i) => `k${i}`).filter((k) => k !== "k5"), "taken"].sort());
    expect(await keys("gc_side")).toEqual(Array.from({ length: N }, (_, i) => `side${i}`).filter((k) => k !== "side5").sort());
    // The shared transaction was rolled back; the failed member ran again alone (its failure might have
    // come from another's write), the others again as a new group; those after it had not run yet.
    expect(runs.slice(0, 5)).toEqual([2, 2, 2, 2, 2]);
    expect(runs[5]).toBe(2);
  });

  test("independent members run side by side in the shared transaction; one's unique violation runs it again alone and the others again together", async () => {
    await t.db.run("INSERT INTO gc (k) VALUES ('taken')");
    let started = 0;
    const runs = new Array(N).fill(0);
    const side = (dup: number) =>
      Promise.allSettled(
        Array.from({ length: N }, (_, i) =>
          t.db.transaction(
            async () => {
              runs[i]++;
              started++;
              await t.db.run("INSERT INTO gc (k) VALUES (?)", [i === dup ? "taken" : `k${runs[i]}_${i}`]);
              return { started, tx: (await t.db.get<{ x: number }>("SELECT txid_current() AS x"))!.x };
            },
            { group: true, independent: true },
          ),
        ),
      );
    const first = await side(-1);
    const values = first.map((r) => (r as PromiseFulfilledResult<{ started: number; tx: number }>).value);
    // Every member had started before the first one's INSERT was answered: they ran side by side.
    expect(values[0]!.started).toBe(N);
    expect(new Set(values.map((v) => v.tx)).size).toBe(1);
    started = 0;
    const second = await side(4);
    expect(second.map((r) => r.status)).toEqual(second.map((_, i) => (i === 4 ? "rejected" : "fulfilled")));
    expect((second[4] as PromiseRejectedResult).reason).toMatchObject({ status: 409, code: "unique_violation" });
    expect(runs).toEqual(new Array(N).fill(3));
    expect((await keys()).length).toBe(2 * N);
    // The members beside the failed one ran again together, in one transaction.
    const again = second.filter((r) => r.status === "fulfilled").map((r) => (r as PromiseFulfilledResult<{ tx: number }>).value.tx);
    expect(again).toHaveLength(N - 1);
    expect(new Set(again).size).toBe(1);
  });

  test("a member that fails having written nothing (reads aside) gets its error; the others share the transaction as before", async () => {
    const runs = new Array(N).fill(0);
    const results = await together(N, async (i) => {
      runs[i]++;
      if (i === 2) throw new Error("refused before writing");
      if (i === 3) {
        await t.db.get("SELECT k FROM gc WHERE k = ?", ["k0"]);
        throw new Error("refused before writing");
      }
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [`k${i}`]);
    });
    expect((results[2] as PromiseRejectedResult).reason.message).toBe("refused before writing");
    expect((results[3] as PromiseRejectedResult).reason.message).toBe("refused before writing");
    expect(results.filter((r) => r.status === "fulfilled").length).toBe(N - 2);
    expect(runs).toEqual(new Array(N).fill(1));
    expect((await t.db.get<{ n: number }>("SELECT COUNT(DISTINCT tx) AS n FROM gc"))!.n).toBe(1);
  });

  test("after-commit callbacks run once per member that committed, after the COMMIT, never for the failed one", async () => {
    await t.db.run("INSERT INTO gc (k) VALUES ('taken')");
    const called: number[] = [];
    const seen: Promise<boolean>[] = [];
    const results = await together(N, async (i) => {
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [i === 7 ? "taken" : `k${i}`]);
      t.db.afterCommit(() => {
        called.push(i);
        // Outside the transaction: a statement sent now sees the row only if the COMMIT came first.
        seen.push(t.db.get("SELECT k FROM gc WHERE k = ?", [`k${i}`]).then((row) => row !== null));
      });
    });
    expect(results.filter((r) => r.status === "rejected").length).toBe(1);
    expect(called.sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i).filter((i) => i !== 7));
    expect(await Promise.all(seen)).toEqual(new Array(N - 1).fill(true));
  });

  test("a serialization failure of a member runs every member again, that one in a transaction of its own that retries it", async () => {
    const runs = new Array(N).fill(0);
    const results = await together(N, async (i) => {
      runs[i]++;
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [`k${i}`]);
      if (i === 4 && runs[i] < 3) throw Object.assign(new Error("could not serialize access"), { errno: "40001" });
    });
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    expect(runs[4]).toBe(3);
    expect((await keys()).length).toBe(N);
  });

  test("a COMMIT the server refuses sends each member to a transaction of its own: only the guilty one fails", async () => {
    await t.db.exec(`CREATE FUNCTION gc_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.k = 'boom' THEN RAISE EXCEPTION 'refused at commit' USING ERRCODE = '23514'; END IF; RETURN NULL; END $$`);
    await t.db.exec("CREATE CONSTRAINT TRIGGER gc_refuse AFTER INSERT ON gc DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gc_refuse()");
    const results = await together(N, (i) => t.db.run("INSERT INTO gc (k) VALUES (?)", [i === 6 ? "boom" : `k${i}`]));
    expect(results.map((r) => r.status)).toEqual(results.map((_, i) => (i === 6 ? "rejected" : "fulfilled")));
    expect((results[6] as PromiseRejectedResult).reason).toMatchObject({ status: 422 });
    expect((await keys()).length).toBe(N - 1);
  });

  test("a COMMIT whose outcome is unknown (the connection is lost) fails every member, and nothing is visible", async () => {
    // The backend ends itself while the COMMIT runs the deferred trigger: no answer to the COMMIT.
    await t.db.exec(`CREATE FUNCTION gc_vanish() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.k = 'boom' THEN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF; RETURN NULL; END $$`);
    await t.db.exec("CREATE CONSTRAINT TRIGGER gc_vanish AFTER INSERT ON gc DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gc_vanish()");
    const called: number[] = [];
    const results = await together(N, async (i) => {
      await t.db.run("INSERT INTO gc (k) VALUES (?)", [i === 2 ? "boom" : `k${i}`]);
      t.db.afterCommit(() => called.push(i));
    });
    for (const r of results) expect(r).toMatchObject({ status: "rejected", reason: { status: 503, code: "unavailable" } });
    expect(called).toEqual([]);
    expect(await keys()).toEqual([]);
    // The pool goes on with a new connection.
    await t.db.transaction(() => t.db.run("INSERT INTO gc (k) VALUES ('after')"), { group: true });
    expect(await keys()).toEqual(["after"]);
  });

  test("concurrent creates over HTTP share transactions; a unique violation among them is 409 alone; change events once per committed record, after commit", async () => {
    await createCollection(t, "items", { read: "authenticated", create: "authenticated" });
    const { token } = await registerUser(t, "gc@example.com");
    expect((await t.req("POST", "/api/v1/items", { token, body: { code: "taken", n: 0 } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/collections/items/indexes", { fields: ["code"], unique: true })).status).toBe(201);
    // The PostgreSQL transaction of each row, kept by a column the catalog does not know.
    await t.db.exec(`ALTER TABLE "items" ADD COLUMN "gc_tx" bigint DEFAULT txid_current()`);
    const events: ChangeEvent[] = [];
    const visibleAtEvent: Promise<boolean>[] = [];
    t.ctx.events.subscribe((e) => {
      events.push(e);
      visibleAtEvent.push(t.db.get(`SELECT "_id" FROM "items" WHERE "_id" = ?`, [e.record._id as string]).then((row) => row !== null));
    });
    const M = 20;
    const bodies = Array.from({ length: M }, (_, i) => (i === 12 ? { code: "taken", n: i + 1, extra: "x" } : { code: `c${i}`, n: i + 1 }));
    const res = await Promise.all(bodies.map((body) => t.req("POST", "/api/v1/items", { token, body })));
    expect(res.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === 12 ? 409 : 201)));
    expect(res[12]!.body.code).toBe("unique_violation");
    // The failed create's new field was rolled back with it, column and catalog entry.
    expect(await columnNames(t, "items")).not.toContain("extra");
    expect((await t.admin("GET", "/api/v1/admin/collections/items")).body.fields.map((f: { name: string }) => f.name)).not.toContain("extra");
    const rows = await t.db.all<{ n: number; gc_tx: number }>(`SELECT "n", "gc_tx" FROM "items" WHERE "n" > 0 ORDER BY "n"`);
    expect(rows.map((r) => r.n)).toEqual(bodies.map((b) => b.n).filter((n) => n !== 13));
    expect(new Set(rows.map((r) => r.gc_tx)).size).toBeLessThan(M - 1);
    const created = events.filter((e) => e.collection === "items" && (e.record.n as number) > 0);
    expect(created.map((e) => e.record.n).sort((a, b) => (a as number) - (b as number))).toEqual(rows.map((r) => r.n));
    expect(await Promise.all(visibleAtEvent)).not.toContain(false);
  });

  test("a create answered from the catalog as last known is checked again in its transaction: another node's rule change or drop holds at once", async () => {
    await createCollection(t, "items", { read: "public", create: "public" });
    expect((await t.req("POST", "/api/v1/items", { body: { n: 0 } })).status).toBe(201);
    // As another node would: the catalog row and its version change, this process is not told.
    const bump = () => t.db.run("UPDATE _meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?", ["schema_version"]);
    const row = (await t.db.get<{ rules: string }>("SELECT rules FROM _collections WHERE name = ?", ["items"]))!;
    await t.db.run("UPDATE _collections SET rules = ? WHERE name = ?", [JSON.stringify({ ...JSON.parse(row.rules), create: "disabled" }), "items"]);
    await bump();
    const refused = await Promise.all(Array.from({ length: N }, (_, i) => t.req("POST", "/api/v1/items", { body: { n: i + 1 } })));
    expect(refused.map((r) => r.status)).toEqual(new Array(N).fill(403));
    // An expression on the record, set by another node (a connection of its own: this process is not told, and
    // answers from the catalog as last known): decided on each record in the transaction, not passed for all.
    await t.db.run("UPDATE _collections SET rules = ? WHERE name = ?", [row.rules, "items"]);
    await bump();
    expect((await t.req("POST", "/api/v1/items", { body: { n: 1 } })).status).toBe(201);
    await runElsewhere(t, "UPDATE _collections SET rules = ? WHERE name = ?", [JSON.stringify({ ...JSON.parse(row.rules), create: "n > 100" }), "items"]);
    await runElsewhere(t, "UPDATE _meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?", ["schema_version"]);
    const decided = await Promise.all(Array.from({ length: N }, (_, i) => t.req("POST", "/api/v1/items", { body: { n: i % 2 ? 200 + i : i } })));
    expect(decided.map((r) => r.status)).toEqual(Array.from({ length: N }, (_, i) => (i % 2 ? 201 : 403)));
    await t.db.run("UPDATE _collections SET rules = ? WHERE name = ?", [row.rules, "items"]);
    await bump();
    expect((await t.req("POST", "/api/v1/items", { body: { n: 1 } })).status).toBe(201);
    await t.db.exec(`DELETE FROM _collections WHERE name = 'items'; DROP TABLE "items"`);
    await bump();
    const gone = await Promise.all(Array.from({ length: N }, (_, i) => t.req("POST", "/api/v1/items", { body: { n: i + 2 } })));
    expect(gone.map((r) => r.status)).toEqual(new Array(N).fill(404));
  });

  test("a create of a collection with a create hook keeps a transaction of its own", async () => {
    await createCollection(t, "hooked", { create: "public", read: "public" });
    t.ctx.hooks.list.push({ collection: "hooked", beforeCreate: () => {} });
    // As a reload of the hook files does: collection handles carry their hooks.
    noteHooksChanged(t.ctx);
    await t.db.exec(`ALTER TABLE "hooked" ADD COLUMN "gc_tx" bigint DEFAULT txid_current()`);
    const res = await Promise.all(Array.from({ length: N }, (_, i) => t.req("POST", "/api/v1/hooked", { body: { n: i } })));
    expect(res.every((r) => r.status === 201)).toBe(true);
    const txs = await t.db.all<{ gc_tx: number }>(`SELECT "gc_tx" FROM "hooked"`);
    expect(new Set(txs.map((r) => r.gc_tx)).size).toBe(N);
  });

  test("inTransaction passes the option on: grouped record writes each publish exactly their own events", async () => {
    const seen: string[] = [];
    t.ctx.events.subscribe((e) => seen.push(e.record._id as string));
    const results = await Promise.allSettled(
      Array.from({ length: N }, (_, i) =>
        inTransaction(
          t.ctx,
          async () => {
            t.ctx.events.stage({ collection: "c", action: "create", record: { _id: `e${i}` }, at: i, by: null });
            await t.db.run("INSERT INTO gc (k) VALUES (?)", [i === 8 ? "k1" : `k${i}`]);
          },
          { group: true },
        ),
      ),
    );
    // Members 1 and 8 write the same key: 8 runs again alone beside a new group of the others, so either
    // may be the one refused; the other commits with the rest in one or two transactions.
    const refused = results.findIndex((r) => r.status === "rejected");
    expect([1, 8]).toContain(refused);
    expect(results.filter((r) => r.status === "rejected").length).toBe(1);
    expect(seen.sort()).toEqual(Array.from({ length: N }, (_, i) => `e${i}`).filter((e) => e !== `e${refused}`).sort());
    expect((await t.db.get<{ n: number }>("SELECT COUNT(DISTINCT tx) AS n FROM gc"))!.n).toBeLessThanOrEqual(2);
  });
});
