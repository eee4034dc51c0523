import { describe, expect, test } from "bun:test";
import { createCollection as createCollectionElsewhere, deleteCollection } from "../../src/collections/admin.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { memoryLogger } from "../../src/log.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { secondEngine } from "../helpers/engine.ts";

// A collection deleted and created again is a new collection: the first value of a field fixes its type
// anew (CONTRACT §2), and every request answers as on any new collection, on both engines (§11), never
// with a 500 (§1). On PostgreSQL the pooled connections still hold the statements they prepared against
// the old table (same text, parameter types inferred from the old columns): they must not be used, whether
// this server or another process (the CLI, another node: here a second context on the same database)
// dropped the table.

const t = appPerTest();

const RULES = { read: "public", create: "public", update: "public", delete: "public" };
type Value = string | number | boolean;

/** A field's type changes between the two lives of the collection; `then` are values of the new type. */
const CASES: { name: string; first: Value; then: [Value, Value] }[] = [
  // "1e3" and "01" would be stored as "1000" and "1" through a parameter typed as a number.
  { name: "a number field comes back as text", first: 1.5, then: ["1e3", "01"] },
  { name: "a text field comes back as a number", first: "hello", then: [2.5, -7] },
  // "yes" would be stored as "true" through a parameter typed as a boolean.
  { name: "a boolean field comes back as text", first: true, then: ["yes", "0"] },
  { name: "a text field comes back as a boolean", first: "on", then: [false, true] },
];

const WAYS = ["the admin API", "another process"] as const;

/** Creates `t` with a full-text index (over its text field `w`) through the admin API. */
async function makeCollection() {
  await createCollection(t, "t", RULES);
  expect((await t.admin("POST", "/api/v1/admin/collections/t/fts")).status).toBe(201);
}

/** Drops `t` and makes it again, through this server or through a second context on the same database. */
async function recreate(way: (typeof WAYS)[number]) {
  if (way === "the admin API") {
    expect((await t.admin("DELETE", "/api/v1/admin/collections/t")).body).toEqual({ ok: true });
    await createCollection(t, "t", RULES);
  } else {
    const other = createContext(t.config, { clock: t.clock, log: memoryLogger(), ...(await secondEngine(t)) });
    try {
      await deleteCollection(other, "t");
      await createCollectionElsewhere(other, { name: "t", rules: RULES });
    } finally {
      await closeContext(other);
    }
  }
  expect((await t.admin("POST", "/api/v1/admin/collections/t/fts")).status).toBe(201);
}

/** The filtered reads: list, count, list with search, count with search (odd ones are counts). */
const READS = ["/api/v1/t?", "/api/v1/t/count?", "/api/v1/t?search=word&", "/api/v1/t/count?search=word&"];
const filtered = (i: number, v: Value) => t.req("GET", READS[i % 4] + `filter=${encodeURIComponent(`x:eq:${v}`)}`);

/** Sends each request one after the other, then all at once (spread over the pool's connections). */
async function sequentialAndConcurrent<T>(n: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await send(i));
  out.push(...(await Promise.all(Array.from({ length: n }, (_, i) => send(n + i)))));
  return out;
}

/** Uses `t` with `x` of the first type: creates, updates, filtered lists, counts and searches, on as many connections as it takes. */
async function useFirst(first: Value) {
  const made = await sequentialAndConcurrent(4, () => t.req("POST", "/api/v1/t", { body: { x: first, w: "word" } }));
  for (const r of made) expect(r.status).toBe(201);
  const patched = await sequentialAndConcurrent(4, (i) => t.req("PATCH", `/api/v1/t/${made[i]!.body._id}`, { body: { x: first } }));
  for (const r of patched) expect(r.status).toBe(200);
  const reads = await sequentialAndConcurrent(4, (i) => filtered(i, first));
  for (const r of reads) expect(r.status).toBe(200);
}

const record = (x: Value, created: number, updated = created) => ({
  _id: expect.any(String),
  _created_at: created,
  _updated_at: updated,
  _owner_id: null,
  _deleted_at: null,
  x,
  w: "word",
});

for (const way of WAYS) {
  describe(`a collection deleted and created again through ${way}`, () => {
    for (const c of CASES) {
      test(`${c.name}: every create is 201 with the values as sent, and reads them back so`, async () => {
        await makeCollection();
        await useFirst(c.first);
        await recreate(way);
        const now = t.clock.now();
        const made = await sequentialAndConcurrent(4, (i) => t.req("POST", "/api/v1/t", { body: { x: c.then[i % 2]!, w: "word" } }));
        made.forEach((r, i) => {
          expect({ status: r.status, body: r.body }).toEqual({ status: 201, body: record(c.then[i % 2]!, now) });
        });
        const read = await t.req("GET", `/api/v1/t/${made[0]!.body._id}`);
        expect({ status: read.status, body: read.body }).toEqual({ status: 200, body: record(c.then[0], now) });
        const fields = await t.admin("GET", "/api/v1/admin/collections/t");
        expect(fields.body.fields.find((f: { name: string }) => f.name === "x")).toEqual({ name: "x", type: typeof c.then[0] === "string" ? "text" : typeof c.then[0] });
      });

      test(`${c.name}: every update is 200 with the whole record`, async () => {
        await makeCollection();
        await useFirst(c.first);
        await recreate(way);
        const created = t.clock.now();
        const made = await Promise.all(Array.from({ length: 8 }, () => t.req("POST", "/api/v1/t", { body: { x: c.then[0], w: "word" } })));
        for (const r of made) expect(r.status).toBe(201);
        t.clock.advance(1000);
        const updated = t.clock.now();
        const patched = await sequentialAndConcurrent(4, (i) => t.req("PATCH", `/api/v1/t/${made[i]!.body._id}`, { body: { x: c.then[1] } }));
        patched.forEach((r, i) => {
          expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { ...record(c.then[1], created, updated), _id: made[i]!.body._id } });
        });
        const again = await t.req("GET", `/api/v1/t/${made[0]!.body._id}`);
        expect(again.body.x).toEqual(c.then[1]);
      });

      test(`${c.name}: filtered lists, counts and searches are 200 with exactly the matching records`, async () => {
        await makeCollection();
        await useFirst(c.first);
        await recreate(way);
        const now = t.clock.now();
        const match = await t.req("POST", "/api/v1/t", { body: { x: c.then[0], w: "word" } });
        expect(match.status).toBe(201);
        expect((await t.req("POST", "/api/v1/t", { body: { x: c.then[1], w: "word" } })).status).toBe(201);
        const list = { items: [{ ...record(c.then[0], now), _id: match.body._id }], next_cursor: null, total: 1 };
        const reads = await sequentialAndConcurrent(4, (i) => filtered(i, c.then[0]));
        reads.forEach((r, i) => {
          expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: i % 2 ? { total: 1 } : list });
        });
      });
    }
  });
}
