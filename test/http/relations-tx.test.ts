import { afterAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";

// A hook on the last collection of a chain refuses deletes of records marked "keep".
const t = createTestApp({
  context: {
    hooks: {
      list: [
        {
          collection: "txc",
          beforeDelete: (e) => {
            if (e.record?.keep === true) throw new Error("this one stays");
          },
        },
      ],
    },
  },
});
afterAll(() => t.close());

const create = async (col: string, body: Record<string, unknown>) => {
  const res = await t.admin("POST", `/api/v1/${col}`, body);
  expect(res.status).toBe(201);
  return res.body._id as string;
};
const state = async (col: string, id: string) => (await t.admin("GET", `/api/v1/${col}/${id}?include_deleted=true`)).body;

describe("on_delete runs inside the delete's transaction", () => {
  test("a failure deep in a cascade chain rolls back the delete, every cascade step and every set_null", async () => {
    for (const name of ["txa", "txb", "txc", "txn"]) await t.admin("POST", "/api/v1/admin/collections", { name });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "txb", from_field: "a", to_col: "txa", type: "one", on_delete: "cascade" });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "txc", from_field: "b", to_col: "txb", type: "one", on_delete: "cascade" });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "txn", from_field: "a", to_col: "txa", type: "one", on_delete: "set_null" });
    const a = await create("txa", {});
    const b = await create("txb", { a });
    const n = await create("txn", { a });
    const c = await create("txc", { b, keep: true });
    for (const path of [`/api/v1/txa/${a}`, `/api/v1/admin/collections/txa/records/${a}`]) {
      const res = await t.admin("DELETE", path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "this one stays", code: "hook_rejected" });
      expect((await state("txa", a))._deleted_at).toBeNull();
      expect((await state("txb", b))._deleted_at).toBeNull();
      expect((await state("txc", c))._deleted_at).toBeNull();
      expect((await state("txn", n)).a).toBe(a);
    }
    expect(await countRows(t, "_relation_cascades")).toBe(0);
    // once the guard is lifted, the same delete goes through the whole chain
    expect((await t.admin("PATCH", `/api/v1/txc/${c}`, { keep: false })).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/txa/${a}`)).status).toBe(200);
    expect((await state("txc", c))._deleted_at).not.toBeNull();
    expect((await state("txn", n)).a).toBeNull();
  });
});
