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
