import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";

// 250 records that all share every sort value: only the final `_id` tie-break (CONTRACT §4, §8b)
// decides their order, so every page boundary falls inside one run of equal values.
const COUNT = 250;

const t = createTestApp();
afterAll(() => t.close());

let ids: string[] = [];

beforeAll(async () => {
  for (const name of ["plain", "indexed"]) {
    const res = await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public" } });
    expect(res.status).toBe(201);
  }
  const records = Array.from({ length: COUNT }, () => ({ grp: "same", n: 7, body: "alpha beta" }));
  // The clock does not move: `_created_at` is equal on every record too.
  const plain = await t.admin("POST", "/api/v1/plain/bulk", records);
  expect(plain.status).toBe(201);
  ids = plain.body.map((r: { _id: string }) => r._id).sort();
  const indexed = await t.admin("POST", "/api/v1/indexed/bulk", records);
  expect(indexed.status).toBe(201);
  // An index on the sort field lets the database walk it in either direction: without the
  // tie-break, a descending walk yields equal values newest first.
  expect((await t.admin("POST", "/api/v1/admin/collections/indexed/indexes", { fields: ["grp"] })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/indexed/indexes", { fields: ["n", "_created_at"] })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/plain/fts")).status).toBe(201);
});

async function allIds(collection: string): Promise<string[]> {
  const res = await t.req("GET", `/api/v1/${collection}?limit=500&fields=_id`);
  expect(res.status).toBe(200);
  return res.body.items.map((r: { _id: string }) => r._id).sort();
}

/** Walks every page in cursor mode; returns the ids in the order served. */
async function walkCursor(collection: string, query: string): Promise<string[]> {
  const seen: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages <= COUNT; pages++) {
    const res = await t.req("GET", `/api/v1/${collection}?${query}${after ? `&after=${after}` : ""}`);
    expect(res.status).toBe(200);
    // The first page has no cursor yet and counts as offset mode.
    expect(res.body.total).toBe(after === null ? COUNT : null);
    seen.push(...res.body.items.map((r: { _id: string }) => r._id));
    after = res.body.next_cursor;
    if (after === null) return seen;
    expect(after).toBe(seen[seen.length - 1]);
  }
  throw new Error("cursor paging did not end");
}

/** Walks every page in offset mode; returns the ids in the order served. */
async function walkPages(collection: string, query: string, perPage: number): Promise<string[]> {
  const seen: string[] = [];
  const pages = Math.ceil(COUNT / perPage);
  for (let page = 1; page <= pages; page++) {
    const res = await t.req("GET", `/api/v1/${collection}?${query}&page=${page}`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(COUNT);
    expect(res.body.items.length).toBe(page < pages ? perPage : COUNT - perPage * (pages - 1));
    seen.push(...res.body.items.map((r: { _id: string }) => r._id));
    expect(res.body.next_cursor).toBe(page < pages ? seen[seen.length - 1] : null);
  }
  return seen;
}

const SORTS = ["grp", "-grp", "grp:desc,n", "-n,-_created_at", "-_created_at", "_created_at:asc"];
const cases: { collection: string; query: string; perPage: number }[] = [];
for (const collection of ["plain", "indexed"])
  for (const sort of SORTS)
    for (const perPage of [50, 7]) {
      const limit = perPage === 50 ? "" : `&limit=${perPage}`;
      cases.push({ collection, query: `sort=${encodeURIComponent(sort)}${limit}`, perPage });
    }
// Equal text gives equal relevance: best match first, then `_id`.
cases.push({ collection: "plain", query: "search=alpha", perPage: 50 });
cases.push({ collection: "plain", query: "search=alpha&limit=7", perPage: 7 });

describe("paging over 250 records with the same sort value visits each record exactly once, in _id order", () => {
  test("both collections hold the same 250 records", async () => {
    expect(ids.length).toBe(COUNT);
    expect(new Set(ids).size).toBe(COUNT);
    expect((await allIds("indexed")).length).toBe(COUNT);
    expect(await allIds("plain")).toEqual(ids);
  });

  for (const c of cases) {
    test(`cursor mode on ${c.collection}: ${c.query}`, async () => {
      const expected = c.collection === "plain" ? ids : await allIds(c.collection);
      expect(await walkCursor(c.collection, c.query)).toEqual(expected);
    });
    test(`offset mode on ${c.collection}: ${c.query}`, async () => {
      const expected = c.collection === "plain" ? ids : await allIds(c.collection);
      expect(await walkPages(c.collection, c.query, c.perPage)).toEqual(expected);
    });
  }
});
