import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";

// A change of a declared field's type converts every stored value (CONTRACT §13); a value never set (null)
// stays null whatever the types.

let t: TestApp;
afterEach(() => t?.close());

test("a boolean field retyped to number, text and json keeps true, false and null apart", async () => {
  t = createTestApp();
  for (const [type, want] of [
    ["number", [1, 0, null]],
    ["text", ["true", "false", null]],
    ["json", [true, false, null]],
  ] as const) {
    const col = `flags_${type}`;
    await createCollection(t, col, { read: "public", create: "public", update: "public", delete: "public" });
    expect((await t.admin("POST", `/api/v1/admin/collections/${col}/fields`, { name: "c", type: "boolean" })).status).toBe(201);
    const ids: string[] = [];
    for (const body of [{ c: true }, { c: false }, {}]) ids.push((await t.req("POST", `/api/v1/${col}`, { body })).body._id);
    const res = await t.admin("PATCH", `/api/v1/admin/collections/${col}/fields/c`, { type });
    expect(res.status).toBe(200);
    const got = [];
    for (const id of ids) got.push((await t.req("GET", `/api/v1/${col}/${id}`)).body.c);
    expect({ type, got }).toEqual({ type, got: [...want] });
  }
});

test("a retype that would leave a rule naming the field unable to check is 409 (the rule changes first); one the rule still fits goes through", async () => {
  t = createTestApp();
  const fields = [{ name: "year", type: "number" }, { name: "title", type: "text" }];
  await createCollection(t, "books", { read: "year > 1900 || _owner_id = @auth.id", create: "public", update: "title ~ 'draft'", delete: "public" }, { fields });
  await createCollection(t, "reviews", { read: "@exists(books, year > 2000)", create: "public", update: "public", delete: "public" });
  await t.admin("POST", "/api/v1/books", { year: 1999, title: "a draft" });
  const refused = await t.admin("PATCH", "/api/v1/admin/collections/books/fields/year", { type: "text" });
  expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: "conflict" });
  expect(refused.body.error).toContain("the read rule of \"books\"");
  expect((await t.admin("GET", "/api/v1/admin/collections/books")).body.fields).toContainEqual({ name: "year", type: "number" });
  // The other collection's rule counts too: books' rule set to one a text year fits, reviews' `year > 2000` still refuses.
  expect((await t.admin("PUT", "/api/v1/admin/collections/books/rules", { rules: { read: "public" } })).status).toBe(200);
  const other = await t.admin("PATCH", "/api/v1/admin/collections/books/fields/year", { type: "text" });
  expect({ status: other.status, code: other.body.code }).toEqual({ status: 409, code: "conflict" });
  expect(other.body.error).toContain("the read rule of \"reviews\"");
  // With the rules changed first, the retype goes through.
  expect((await t.admin("PUT", "/api/v1/admin/collections/reviews/rules", { rules: { read: "public" } })).status).toBe(200);
  expect((await t.admin("PATCH", "/api/v1/admin/collections/books/fields/year", { type: "text" })).status).toBe(200);
});
