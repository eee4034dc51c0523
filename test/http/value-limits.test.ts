import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp, type TestResponse } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// Values too large for PostgreSQL's stored forms, which SQLite has no limit for: a full-text vector
// (at most 1 MB) and a btree index entry (about 2.7 kB). PostgreSQL answers 400, never 500, and
// keeps nothing; SQLite stores the record.

let t: TestApp;

beforeAll(async () => {
  t = createTestApp();
  await createCollection(t, "big", { read: "public" });
  expect((await t.admin("POST", "/api/v1/admin/collections/big/fts")).status).toBe(201);
  await createCollection(t, "pages", { read: "public" });
  expect((await t.admin("POST", "/api/v1/pages", { slug: "home" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/pages/indexes", { fields: ["slug"], unique: true })).status).toBe(201);
});
afterAll(() => t.close());

/** The write is 400 and kept nothing on PostgreSQL, 201 and kept on SQLite: `count` of `countPath` is the total after. */
async function refusedOnPostgresOnly(res: TestResponse, countPath: string, before: number): Promise<void> {
  if (onPostgres) {
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "a value is too large for the database to store or index", code: "bad_request" });
  } else expect(res.status).toBe(201);
  expect((await t.req("GET", countPath)).body).toEqual({ total: onPostgres ? before : before + 1 });
}

describe("a value too large for PostgreSQL's stored form", () => {
  test("a text too large for a full-text vector", async () => {
    // About 150,000 different words: more than a tsvector can hold, well under the body limit.
    const words = Array.from({ length: 150_000 }, (_, i) => `w${i.toString(36)}x`).join(" ");
    await refusedOnPostgresOnly(await t.admin("POST", "/api/v1/big", { title: words }), "/api/v1/big/count?search=w0x", 0);
  });

  test("a text too large for an entry of a unique index", async () => {
    // Letters that do not compress: PostgreSQL compresses long values before it measures them.
    let seed = 7;
    const slug = Array.from({ length: 4000 }, () => String.fromCharCode(97 + ((seed = (seed * 48271) % 2147483647) % 26))).join("");
    await refusedOnPostgresOnly(await t.admin("POST", "/api/v1/pages", { slug }), "/api/v1/pages/count", 1);
  });
});
