import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// The first member of a group sends the group's one catalog check (a read). A create that then fails with a
// 422 (a value of another type than its field's, a bad field name, a name in another case, a field rule
// broken) has written nothing: it gets its error alone, and the others of the burst still share transactions
// (they used to be all sent, 39 of 40, to transactions of their own).

describe.skipIf(!onPostgres)("group commit on PostgreSQL and failing creates", () => {
  let t: TestApp;
  beforeEach(async () => {
    t = createTestApp();
    await createCollection(t, "items", { read: "public", create: "public" });
    expect((await t.req("POST", "/api/v1/items", { body: { code: "first", n: 0 } })).status).toBe(201);
    // The PostgreSQL transaction of each row, kept by a column the catalog does not know.
    await t.db.exec(`ALTER TABLE "items" ADD COLUMN "gc_tx" bigint DEFAULT txid_current()`);
  });
  afterEach(() => t.close());

  /** A burst of 40 creates after a burst that grouped; `first` is the first one's body, a bad one. */
  async function burstAfter(first: Record<string, unknown>) {
    // A server under load: the creates before have grouped, the catalog and relations are known.
    const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => t.req("POST", "/api/v1/items", { body: { code: `w${i}`, n: -1 } })));
    expect(warm.map((r) => r.status)).toEqual(warm.map(() => 201));
    const bodies: Record<string, unknown>[] = [first, ...Array.from({ length: 39 }, (_, i) => ({ code: `k${i}`, n: i + 1 }))];
    const res = await Promise.all(bodies.map((body) => t.req("POST", "/api/v1/items", { body })));
    expect(res.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === 0 ? 422 : 201)));
    const rows = await t.db.all<{ gc_tx: bigint | number }>(`SELECT "gc_tx" FROM "items" WHERE "n" > 0`);
    expect(rows).toHaveLength(39);
    expect(new Set(rows.map((r) => String(r.gc_tx))).size).toBeLessThan(10);
  }

  test("a wrong-typed create first in a burst is 422 alone; the others still share transactions", async () => {
    await burstAfter({ code: "bad", n: "not a number" });
  });

  test("a create naming a bad field first in a burst is 422 alone; the others still share transactions", async () => {
    await burstAfter({ code: "bad", "no good!": 1 });
  });

  test("a create breaking a field rule first in a burst is 422 alone; the others still share transactions", async () => {
    expect((await t.admin("PUT", "/api/v1/admin/collections/items/rules", { field_rules: [{ field: "code", required: true }] })).status).toBe(200);
    await burstAfter({ n: 1 });
  });

  test("a create naming a field in another case first in a burst is 422 alone; the others still share transactions", async () => {
    await burstAfter({ CODE: "bad", n: 1 });
  });
});
