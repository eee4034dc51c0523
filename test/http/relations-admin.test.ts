import { describe, expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { schemaObjectExists } from "../helpers/schema.ts";

// Every test gets its own app with four collections and no relation yet.
const t = appPerTest(async (t) => {
  for (const name of ["users2", "posts", "tags", "comments"]) await createCollection(t, name);
  // posts.score becomes a number field
  expect((await t.admin("POST", "/api/v1/posts", { title: "x", score: 1 })).status).toBe(201);
});

/** Creates a relation that must answer 201, and returns it. */
async function relate(body: Record<string, unknown>) {
  const res = await t.admin("POST", "/api/v1/admin/relations", body);
  expect(res.status).toBe(201);
  return res.body;
}
const POST_AUTHOR = { from_col: "posts", from_field: "author", to_col: "users2", type: "one" };

const REL_KEYS = ["created_at", "from_col", "from_field", "id", "on_delete", "to_col", "to_field", "type"];

describe("admin relations API", () => {
  test("creating a one relation answers 201 with the stored relation and on_delete restrict by default", async () => {
    const res = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "users2", type: "one" });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(REL_KEYS);
    expect(res.body).toMatchObject({ from_col: "posts", from_field: "author", to_col: "users2", to_field: null, type: "one", on_delete: "restrict" });
    expect(typeof res.body.id).toBe("string");
    expect(res.body.created_at).toBe(t.clock.now());
  });

  test("a one relation gives its collection a text field at once", async () => {
    await relate(POST_AUTHOR);
    const col = (await t.admin("GET", "/api/v1/admin/collections/posts")).body;
    expect(col.fields).toContainEqual({ name: "author", type: "text" });
  });

  test("listing relations answers { items } with every relation", async () => {
    const one = await relate(POST_AUTHOR);
    const via = await relate({ from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" });
    const res = await t.admin("GET", "/api/v1/admin/relations");
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: any) => r.id).sort()).toEqual([one.id, via.id].sort());
  });

  test("a second relation on the same field is 409 conflict", async () => {
    await relate(POST_AUTHOR);
    const res = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "tags", type: "one" });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("conflict");
  });

  test("a many relation without to_field takes it from the one relation back", async () => {
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "comments", from_field: "post", to_col: "posts", type: "one", on_delete: "cascade" });
    const res = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "comments", to_col: "comments", type: "many" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ type: "many", to_field: "post", on_delete: "restrict" });
  });

  test("a many_via relation answers 201 and accepts on_delete set_null", async () => {
    const res = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via", on_delete: "set_null" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ type: "many_via", on_delete: "set_null", to_field: null });
  });

  const bad: [string, Record<string, unknown> | string, number, string][] = [
    ["a body that is not an object", "[1]", 400, "bad_request"],
    ["a missing from_field", { from_col: "posts", to_col: "tags", type: "one" }, 400, "bad_request"],
    ["an unknown type", { from_col: "posts", from_field: "x", to_col: "tags", type: "several" }, 400, "bad_request"],
    ["an unknown on_delete", { from_col: "posts", from_field: "x", to_col: "tags", type: "one", on_delete: "explode" }, 400, "bad_request"],
    ["an invalid field name", { from_col: "posts", from_field: "1 bad", to_col: "tags", type: "one" }, 400, "bad_request"],
    ["a system field", { from_col: "posts", from_field: "_owner_id", to_col: "tags", type: "one" }, 400, "bad_request"],
    ["a one relation on a number field", { from_col: "posts", from_field: "score", to_col: "tags", type: "one" }, 400, "bad_request"],
    ["a many_via relation on a stored field", { from_col: "posts", from_field: "title", to_col: "tags", type: "many_via" }, 400, "bad_request"],
    ["a many relation with no to_field and no one relation back", { from_col: "tags", from_field: "things", to_col: "users2", type: "many" }, 400, "bad_request"],
    ["a many relation whose to_field is a number field", { from_col: "tags", from_field: "things", to_col: "posts", type: "many", to_field: "score" }, 400, "bad_request"],
    ["an unknown source collection", { from_col: "nope", from_field: "x", to_col: "tags", type: "one" }, 404, "not_found"],
    ["an unknown target collection", { from_col: "posts", from_field: "x", to_col: "nope", type: "one" }, 404, "not_found"],
  ];
  for (const [name, body, status, code] of bad) {
    test(`${name} is refused with ${status} ${code}`, async () => {
      const res = await t.admin("POST", "/api/v1/admin/relations", body);
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ error: expect.any(String), code });
    });
  }

  test("relations need admin credentials", async () => {
    expect((await t.req("GET", "/api/v1/admin/relations")).status).toBe(401);
    expect((await t.req("POST", "/api/v1/admin/relations", { body: {} })).status).toBe(401);
  });

  test("deleting an unknown relation is 404", async () => {
    const res = await t.admin("DELETE", "/api/v1/admin/relations/01NOPE");
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
  });

  test("deleting a relation answers { ok: true } and it is gone from the list", async () => {
    const oneId = (await relate(POST_AUTHOR)).id;
    const res = await t.admin("DELETE", `/api/v1/admin/relations/${oneId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    const list = (await t.admin("GET", "/api/v1/admin/relations")).body.items;
    expect(list.map((r: any) => r.id)).not.toContain(oneId);
  });

  test("deleting a collection removes its relations and their junction tables", async () => {
    await relate(POST_AUTHOR);
    await relate({ from_col: "comments", from_field: "post", to_col: "posts", type: "one", on_delete: "cascade" });
    await relate({ from_col: "posts", from_field: "comments", to_col: "comments", type: "many" });
    await relate({ from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" });
    const before = (await t.admin("GET", "/api/v1/admin/relations")).body.items;
    const via = before.find((r: any) => r.type === "many_via");
    expect(via).toBeDefined();
    const junction = `_rel_${via.id.toLowerCase()}`;
    expect(await schemaObjectExists(t, junction)).toBe(true);
    expect((await t.admin("DELETE", "/api/v1/admin/collections/tags")).status).toBe(200);
    expect(await schemaObjectExists(t, junction)).toBe(false);
    const after = (await t.admin("GET", "/api/v1/admin/relations")).body.items;
    expect(after.some((r: any) => r.from_col === "tags" || r.to_col === "tags")).toBe(false);
    expect(after.length).toBe(before.length - 1);
    expect((await t.admin("DELETE", "/api/v1/admin/collections/posts")).status).toBe(200);
    expect((await t.admin("GET", "/api/v1/admin/relations")).body.items).toEqual([]);
  });
});
