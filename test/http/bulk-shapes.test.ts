import { expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";

// A bulk insert whose records differ in shape (fields set, a field first seen midway, nulls) stores each
// record exactly as sent, in order, on every engine (a database server gets the rows in multi-row
// statements), and a duplicate late in the array names its own index.

const t = appPerTest(async (app) => {
  await createCollection(app, "rows", { read: "public", create: "public" });
});

test("records of different shapes in one bulk are stored as sent, in order", async () => {
  const body = Array.from({ length: 500 }, (_, i) =>
    i % 3 === 0 ? { n: i } : i % 3 === 1 ? { n: i, title: `t${i}` } : i >= 250 ? { n: i, late: i % 2 === 0, meta: { i } } : { title: `only${i}` },
  );
  const res = await t.req("POST", "/api/v1/rows/bulk", { body });
  expect(res.status).toBe(201);
  const list = await t.req("GET", "/api/v1/rows?limit=500&sort=_id");
  expect(list.body.items.length).toBe(500);
  const byId = new Map(list.body.items.map((r: Record<string, unknown>) => [r._id, r]));
  const created = res.body.items ?? res.body;
  created.forEach((rec: Record<string, unknown>, i: number) => {
    const stored = byId.get(rec._id) as Record<string, unknown>;
    for (const k of ["n", "title", "late", "meta"]) expect(stored[k]).toEqual((body[i] as Record<string, unknown>)[k] ?? null);
    expect(stored._created_at).toBe(rec._created_at);
  });
});

test("a duplicate of a unique field at index 321 is 409 naming index 321, and nothing is saved", async () => {
  const seed = await t.req("POST", "/api/v1/rows", { body: { code: "seed" } });
  expect(seed.status).toBe(201);
  const idx = await t.admin("POST", "/api/v1/admin/collections/rows/indexes", { fields: ["code"], unique: true });
  expect(idx.status).toBe(201);
  const body = Array.from({ length: 400 }, (_, i) => ({ code: i === 321 ? "c5" : `c${i}` }));
  const res = await t.req("POST", "/api/v1/rows/bulk", { body });
  expect(res.status).toBe(409);
  expect(res.body.index).toBe(321);
  expect((await t.req("GET", "/api/v1/rows/count")).body).toEqual({ total: 1 });
});
