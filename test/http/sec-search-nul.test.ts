import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// A NUL character in `search` is a clear 400 on every read that takes `search`, never a 500.

let t: TestApp;

beforeAll(async () => {
  t = createTestApp();
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "docs", rules: { read: "public", create: "public" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/docs", { title: "the quick brown fox", n: 1 })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections/docs/fts", { fields: ["title"] })).status).toBeLessThan(300);
});
afterAll(() => t.close());

const nul = { error: "search must not contain a NUL character", code: "bad_request" };

describe("search with a NUL byte", () => {
  for (const [what, path] of [
    ["list", "/api/v1/docs?search=qu%00ick"],
    ["count", "/api/v1/docs/count?search=qu%00ick"],
    ["aggregate", "/api/v1/docs/aggregate?fn=count&search=qu%00ick"],
    ["aggregate grouped", "/api/v1/docs/aggregate?fn=sum&field=n&group_by=title&search=%00"],
    ["list with a trailing NUL", "/api/v1/docs?search=quick%00"],
  ])
    test(`${what} answers 400 bad_request`, async () => {
      const res = await t.req("GET", path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(nul);
    });

  test("the same search without the NUL works", async () => {
    const res = await t.req("GET", "/api/v1/docs?search=quick&fields=title");
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: { title: string }) => r.title)).toEqual(["the quick brown fox"]);
  });
});
