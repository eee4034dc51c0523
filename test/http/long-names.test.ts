import { afterAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";

// Names may be 64 characters long (CONTRACT). PostgreSQL cuts identifiers at 63 bytes: two names that
// differ only in their last character must still be two tables, two columns and two indexes, and every
// answer must carry the names as given, on both engines.

const t = createTestApp();
afterAll(() => t.close());

const A = "a".repeat(63) + "b";
const B = "a".repeat(63) + "c";
const F = "f".repeat(63) + "x";
const G = "f".repeat(63) + "y";

describe("64-character collection and field names", () => {
  test("two collections and two fields that share their first 63 characters stay apart", async () => {
    for (const name of [A, B]) {
      const r = await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public", create: "public" } });
      expect(r.status).toBe(201);
      expect(r.body.name).toBe(name);
    }
    const one = await t.admin("POST", `/api/v1/${A}`, { [F]: "first", [G]: "second", n: 1 });
    expect(one.status).toBe(201);
    expect(one.body[F]).toBe("first");
    expect(one.body[G]).toBe("second");
    const other = await t.admin("POST", `/api/v1/${B}`, { [F]: "elsewhere" });
    expect(other.status).toBe(201);

    const got = await t.req("GET", `/api/v1/${A}/${one.body._id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(one.body);

    const patched = await t.admin("PATCH", `/api/v1/${A}/${one.body._id}`, { [G]: "changed" });
    expect(patched.status).toBe(200);
    expect(patched.body[F]).toBe("first");
    expect(patched.body[G]).toBe("changed");

    const list = await t.req("GET", `/api/v1/${B}`);
    expect(list.body.total).toBe(1);
    expect(list.body.items[0][F]).toBe("elsewhere");
    expect(Object.keys(list.body.items[0])).toContain(F);
  });

  test("filter, sort, aggregate and indexes on long field names", async () => {
    const name = "b".repeat(64);
    expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public", create: "public" } })).status).toBe(201);
    const bulk = await t.admin("POST", `/api/v1/${name}/bulk`, [
      { [F]: "x", [G]: 3 },
      { [F]: "y", [G]: 1 },
      { [F]: "x", [G]: 2 },
    ]);
    expect(bulk.status).toBe(201);
    for (const fields of [[F], [G], [F, G]]) {
      const idx = await t.admin("POST", `/api/v1/admin/collections/${name}/indexes`, { fields });
      expect(idx.status).toBe(201);
      expect(idx.body.fields).toEqual(fields);
    }
    const unique = await t.admin("POST", `/api/v1/admin/collections/${name}/indexes`, { fields: [G], unique: true });
    expect(unique.status).toBe(201);
    const indexes = await t.admin("GET", `/api/v1/admin/collections/${name}/indexes`);
    expect(indexes.body.items).toHaveLength(4);

    const page = await t.req("GET", `/api/v1/${name}?filter=${F}:eq:x&sort=-${G}`);
    expect(page.status).toBe(200);
    expect(page.body.items.map((r: any) => r[G])).toEqual([3, 2]);
    const sum = await t.req("GET", `/api/v1/${name}/aggregate?fn=sum&field=${G}&group_by=${F}`);
    expect(sum.status).toBe(200);
    expect(sum.body).toEqual({ groups: [{ group: "x", value: 5 }, { group: "y", value: 1 }] });
    const dup = await t.admin("POST", `/api/v1/${name}`, { [G]: 3 });
    expect(dup.status).toBe(409);
  });

  test("full-text search over a long field name", async () => {
    const name = "c".repeat(64);
    expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public", create: "public" } })).status).toBe(201);
    expect((await t.admin("POST", `/api/v1/${name}`, { [F]: "quiet harbour" })).status).toBe(201);
    const fts = await t.admin("POST", `/api/v1/admin/collections/${name}/fts`, { fields: [F] });
    expect(fts.status).toBe(201);
    const hits = await t.req("GET", `/api/v1/${name}?search=harbour`);
    expect(hits.status).toBe(200);
    expect(hits.body.items.map((r: any) => r[F])).toEqual(["quiet harbour"]);
  });

  test("a long collection can be dropped and made again", async () => {
    const name = "d".repeat(64);
    expect((await t.admin("POST", "/api/v1/admin/collections", { name })).status).toBe(201);
    expect((await t.admin("POST", `/api/v1/${name}`, { [F]: "v" })).status).toBe(201);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/${name}`)).status).toBe(200);
    expect((await t.admin("POST", "/api/v1/admin/collections", { name })).status).toBe(201);
    const list = await t.admin("GET", `/api/v1/${name}`);
    expect(list.body.total).toBe(0);
  });
});
