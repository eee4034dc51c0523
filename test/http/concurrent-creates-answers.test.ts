import { afterEach, beforeEach, expect, test } from "bun:test";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";
import { waitFor } from "../helpers/wait.ts";

// Many creates at once, some of which fail (on PostgreSQL they share transactions, and a member that fails
// sends the others to transactions of their own): each gets exactly the answer it would have had alone,
// each stored record is published once, and a database lost in the middle is 503, never 500.

let t: TestApp;
beforeEach(async () => {
  t = createTestApp();
  await createCollection(t, "items", { read: "public", create: "public" });
  expect((await t.req("POST", "/api/v1/items", { body: { code: "taken", n: 0 } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/items/indexes", { fields: ["code"], unique: true })).status).toBe(201);
});
afterEach(() => t.close());

const storedCount = async () => Number((await t.db.get<{ c: number }>(`SELECT COUNT(*) AS c FROM "items"`))!.c);

test("300 creates at once with unique violations, wrong types and unknown collections: each answered as alone, each stored one published once", async () => {
  const events: ChangeEvent[] = [];
  t.ctx.events.subscribe((e) => {
    if (e.collection === "items") events.push(e);
  });
  const cases = Array.from({ length: 300 }, (_, i) =>
    i % 7 === 5
      ? { path: "/api/v1/items", body: { code: "taken", n: i + 1 }, want: 409 }
      : i % 13 === 7
        ? { path: "/api/v1/items", body: { code: `c${i}`, n: "not a number" }, want: 422 }
        : i % 29 === 3
          ? { path: "/api/v1/nosuch", body: { code: `c${i}` }, want: 404 }
          : { path: "/api/v1/items", body: { code: `c${i}`, n: i + 1 }, want: 201 },
  );
  const res = await Promise.all(cases.map((c) => t.req("POST", c.path, { body: c.body })));
  expect(res.map((r) => r.status)).toEqual(cases.map((c) => c.want));
  const created = res.filter((r) => r.status === 201).map((r) => r.body._id as string);
  expect(await storedCount()).toBe(created.length + 1);
  await waitFor(() => events.length >= created.length, { what: "one change event per stored record" });
  expect(events.map((e) => e.record._id).sort()).toEqual([...created].sort());
});

test.skipIf(!onPostgres)("connections killed during bursts of creates: every answer is 201 or 503, every 201 is stored, and the app goes on", async () => {
  const statuses = new Map<number, number>();
  const created: string[] = [];
  for (let round = 0; round < 10; round++) {
    const burst = Array.from({ length: 60 }, (_, i) => t.req("POST", "/api/v1/items", { body: { code: `r${round}-${i}`, n: i } }));
    await Bun.sleep(round % 4);
    const kill = t.db
      .all("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
      .catch(() => null);
    for (const r of await Promise.all(burst)) {
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 201) created.push(r.body._id);
    }
    await kill;
  }
  expect([...statuses.keys()].filter((s) => s !== 201 && s !== 503)).toEqual([]);
  const ids = new Set((await t.db.all<{ _id: string }>(`SELECT "_id" FROM "items"`)).map((r) => r._id));
  expect(created.filter((id) => !ids.has(id))).toEqual([]);
  expect((await t.req("POST", "/api/v1/items", { body: { code: "after", n: 1 } })).status).toBe(201);
});
