import { describe, expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { indexExists, queryPlan } from "../helpers/schema.ts";

const base = "/api/v1/admin/collections/posts/indexes";

// Every test gets its own app with two posts and no index yet.
const t = appPerTest(async (t) => {
  await createCollection(t, "posts", { read: "public" });
  await t.admin("POST", "/api/v1/posts", { slug: "a", author: "x", n: 1 });
  await t.admin("POST", "/api/v1/posts", { slug: "b", author: "x", n: 2 });
});

/** Creates indexes in order, each must answer 201. */
async function addIndexes(...bodies: { fields: string[]; unique?: boolean }[]) {
  for (const body of bodies) expect((await t.admin("POST", base, body)).status).toBe(201);
}
const SLUG_UNIQUE = { fields: ["slug"], unique: true };
const AUTHOR_N = { fields: ["author", "n"] };

describe("indexes admin API", () => {
  test("an empty collection has no indexes", async () => {
    expect((await t.admin("GET", base)).body).toEqual({ items: [] });
  });

  test("POST creates a single-field unique index: 201 { name, fields, unique }", async () => {
    const res = await t.admin("POST", base, { fields: ["slug"], unique: true });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ name: expect.any(String), fields: ["slug"], unique: true });
    expect(await indexExists(t, res.body.name)).toBe(true);
  });

  test("a multi-field index defaults to non-unique and both show in the list and the collection object", async () => {
    await addIndexes(SLUG_UNIQUE);
    const res = await t.admin("POST", base, { fields: ["author", "n"] });
    expect(res.status).toBe(201);
    expect(res.body.unique).toBe(false);
    const list = (await t.admin("GET", base)).body.items;
    expect(list.map((i: { fields: string[] }) => i.fields)).toEqual([["slug"], ["author", "n"]]);
    const col = (await t.admin("GET", "/api/v1/admin/collections/posts")).body;
    expect(col.indexes).toEqual(list);
  });

  test("a write that breaks a unique index is 409 unique_violation, on create and on update", async () => {
    await addIndexes(SLUG_UNIQUE);
    const dup = await t.admin("POST", "/api/v1/posts", { slug: "a" });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("unique_violation");
    const b = (await t.req("GET", "/api/v1/posts?filter=slug:eq:b")).body.items[0];
    const upd = await t.admin("PATCH", `/api/v1/posts/${b._id}`, { slug: "a" });
    expect(upd.status).toBe(409);
    expect(upd.body.code).toBe("unique_violation");
    expect((await t.req("GET", "/api/v1/posts/count")).body).toEqual({ total: 2 });
  });

  test("a unique index over existing duplicates is refused with 409 and leaves nothing behind", async () => {
    await addIndexes(SLUG_UNIQUE, AUTHOR_N);
    const res = await t.admin("POST", base, { fields: ["author"], unique: true });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("unique_violation");
    expect((await t.admin("GET", base)).body.items).toHaveLength(2);
  });

  const bad: [string, unknown][] = [
    ["an unknown field", { fields: ["nope"] }],
    ["no fields", { fields: [] }],
    ["fields not an array", { fields: "slug" }],
    ["a non-string field", { fields: [1] }],
    ["a repeated field", { fields: ["n", "n"] }],
    ["unique not a boolean", { fields: ["n"], unique: "yes" }],
    ["a body that is not an object", [1]],
  ];
  for (const [name, body] of bad) {
    test(`POST with ${name} is 400 bad_request`, async () => {
      const res = await t.admin("POST", base, body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
    });
  }

  test("the same index twice is 409 conflict; unknown collection 404; no admin 401", async () => {
    await addIndexes(AUTHOR_N);
    expect((await t.admin("POST", base, { fields: ["author", "n"] })).status).toBe(409);
    expect((await t.admin("POST", "/api/v1/admin/collections/nothing/indexes", { fields: ["n"] })).status).toBe(404);
    expect((await t.req("GET", base)).status).toBe(401);
    expect((await t.req("POST", base, { body: { fields: ["n"] } })).status).toBe(401);
  });

  test("DELETE drops the index: 200 { ok: true }; the unique rule stops applying; unknown index 404", async () => {
    await addIndexes(SLUG_UNIQUE, AUTHOR_N);
    const slugIndex = (await t.admin("GET", base)).body.items[0].name;
    const res = await t.admin("DELETE", `${base}/${slugIndex}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await t.admin("POST", "/api/v1/posts", { slug: "a" })).status).toBe(201);
    expect((await t.admin("GET", base)).body.items.map((i: { fields: string[] }) => i.fields)).toEqual([["author", "n"]]);
    const again = await t.admin("DELETE", `${base}/${slugIndex}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("not_found");
  });

  test("a query on an indexed field uses the index", async () => {
    await addIndexes(AUTHOR_N);
    const name = (await t.admin("GET", base)).body.items[0].name;
    expect(await queryPlan(t, `SELECT * FROM "posts" WHERE "author" = ? ORDER BY "n"`, ["x"])).toContain(name);
  });
});
