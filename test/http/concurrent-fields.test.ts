import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";

// Writes that arrive together and each bring a field the collection has not seen yet: on
// PostgreSQL their transactions run side by side, and each adds the column; none may fail for it.

let t: TestApp | null = null;
afterEach(() => t?.close());

test("records written at once with the same new fields are all created, and the fields are known once", async () => {
  t = createTestApp();
  await createCollection(t, "burst");
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, i) => t!.admin("POST", "/api/v1/burst", { n: i, label: `r${i}`, [`own${i % 2}`]: true })),
  );
  expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201));
  const col = await t.admin("GET", "/api/v1/admin/collections/burst");
  const fields = (col.body.fields as { name: string; type: string }[]).map((f) => `${f.name}:${f.type}`).sort();
  expect(fields).toEqual(["label:text", "n:number", "own0:boolean", "own1:boolean"]);
  const list = await t.admin("GET", "/api/v1/burst?sort=n&limit=10");
  expect(list.body.items.map((r: { n: number; label: string }) => [r.n, r.label])).toEqual(Array.from({ length: 8 }, (_, i) => [i, `r${i}`]));
});

test("records that add fields while their collection is dropped are created or 404, never a 500", async () => {
  t = createTestApp();
  for (let round = 0; round < 6; round++) {
    const name = `dropping${round}`;
    await createCollection(t, name);
    expect((await t.admin("POST", `/api/v1/${name}`, { v: 1 })).status).toBe(201);
    const writes = Array.from({ length: 10 }, (_, i) => t!.admin("POST", `/api/v1/${name}`, { [`z${i}`]: i }));
    const drop = t.admin("DELETE", `/api/v1/admin/collections/${name}`);
    const statuses = (await Promise.all(writes)).map((r) => r.status);
    expect((await drop).status).toBe(200);
    expect({ round, odd: statuses.filter((s) => s !== 201 && s !== 404) }).toEqual({ round, odd: [] });
  }
});
