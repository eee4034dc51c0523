import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// A value too large for an index entry: PostgreSQL's btree takes at most about 2.7 kB per entry and
// answers 400 (never 500); SQLite has no such limit and stores it.

let t: TestApp;

beforeAll(async () => {
  t = createTestApp();
  await createCollection(t, "pages", { read: "public" });
  expect((await t.admin("POST", "/api/v1/pages", { slug: "home" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/pages/indexes", { fields: ["slug"], unique: true })).status).toBe(201);
});
afterAll(() => t.close());

describe("a unique index over a text field", () => {
  test("a value too large for an index entry is 400 on PostgreSQL, stored on SQLite", async () => {
    // Letters that do not compress: PostgreSQL compresses long values before it measures them.
    let seed = 7;
    const slug = Array.from({ length: 4000 }, () => String.fromCharCode(97 + ((seed = (seed * 48271) % 2147483647) % 26))).join("");
    const res = await t.admin("POST", "/api/v1/pages", { slug });
    if (onPostgres) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "a value is too large for the database to store or index", code: "bad_request" });
      expect((await t.req("GET", "/api/v1/pages/count")).body).toEqual({ total: 1 });
    } else {
      expect(res.status).toBe(201);
      expect((await t.req("GET", "/api/v1/pages/count")).body).toEqual({ total: 2 });
    }
  });
});
