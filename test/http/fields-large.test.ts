import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// Every change of a declared field (CONTRACT §13) with data in the table: 10,000 records, written with bulk
// inserts. What names the field follows a rename (field rules, the unique index, the full-text index, a
// relation); a change that fails, before or after the column was replaced, leaves everything as it was.

setDefaultTimeout(120_000);

const N = 10_000;

let t: TestApp;
beforeAll(async () => {
  t = createTestApp();
  await t.ready;
});
afterAll(() => t.close());

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await t.admin(method, `/api/v1${path}`, body);
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** Writes `n` records made by `make`, 500 per bulk insert. */
async function fill(collection: string, n: number, make: (i: number) => Record<string, unknown>): Promise<void> {
  for (let from = 0; from < n; from += 500) await ok("POST", `/${collection}/bulk`, Array.from({ length: Math.min(500, n - from) }, (_, k) => make(from + k)), 201);
}

const total = async (query: string, collection = "posts") => (await ok("GET", `/${collection}?${query}&limit=1`)).total as number;
const fieldsOf = async (collection: string) => (await ok("GET", `/admin/collections/${collection}`)).fields;
/** The records with these `seq` values, as the API returns them. */
const bySeq = async (seqs: number[], collection = "posts") => (await ok("GET", `/${collection}?filter=seq:in:${seqs.join(",")}&sort=seq`)).items;

describe("changes of a field on a table of 10,000 records", () => {
  test("add, rename, retype between every type and drop keep every value, and what names a field follows its rename", async () => {
    await ok("POST", "/admin/collections", { name: "people", fields: [{ name: "name", type: "text" }], rules: { read: "public" } }, 201);
    const people = (await ok("POST", "/people/bulk", Array.from({ length: 10 }, (_, i) => ({ name: `person ${i}` })), 201)).map((p: any) => p._id);
    await ok(
      "POST",
      "/admin/collections",
      {
        name: "posts",
        rules: { read: "public" },
        field_rules: [{ field: "title", required: true }],
        fields: [
          { name: "seq", type: "number" },
          { name: "title", type: "text" },
          { name: "code", type: "text" },
          { name: "flag", type: "text" },
          { name: "n", type: "number" },
          { name: "meta", type: "json" },
          { name: "author", type: "text" },
        ],
      },
      201,
    );
    // The records first (a bulk insert into a bare table is quickest), then what names their fields.
    await fill("posts", N, (i) => ({ seq: i, title: `title ${i} word${i % 100}`, code: String(i), flag: i % 2 ? "true" : "false", n: i / 4, meta: { i, tags: ["a"] }, author: people[i % 10] }));
    await ok("POST", "/admin/relations", { from_col: "posts", from_field: "author", to_col: "people", type: "one" }, 201);
    await ok("POST", "/admin/collections/posts/indexes", { fields: ["title"], unique: true }, 201);
    await ok("POST", "/admin/collections/posts/indexes", { fields: ["seq"] }, 201);
    await ok("POST", "/admin/collections/posts/fts", undefined, 201);
    expect(await total("search=word42")).toBe(100);

    // Added: every record reads it as null, filters and sorts by it.
    await ok("POST", "/admin/collections/posts/fields", { name: "extra", type: "number" }, 201);
    expect(await total("filter=extra:eq:null")).toBe(N);

    // Renamed: values, the unique index, the full-text index, field rules and the relation follow.
    const renamed = await ok("PATCH", "/admin/collections/posts/fields/title", { name: "headline" });
    expect(renamed.indexes.find((i: any) => i.unique).fields).toEqual(["headline"]);
    expect(renamed.field_rules).toEqual([{ field: "headline", required: true }]);
    expect(renamed.fts).toEqual({ enabled: true, fields: ["headline", "code", "flag"] });
    expect(await total("filter=headline:like:title %")).toBe(N);
    expect(await total("search=word42")).toBe(100);
    const dup = await t.admin("POST", "/api/v1/posts", { headline: "title 5 word5" });
    expect({ status: dup.status, code: dup.body.code }).toEqual({ status: 409, code: "unique_violation" });
    const missing = await t.admin("POST", "/api/v1/posts", { seq: -1 });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual([{ field: "headline", rule: "required", message: '"headline" is required.' }]);
    await ok("PATCH", "/admin/collections/posts/fields/author", { name: "writer" });
    const rel = (await ok("GET", "/admin/relations")).items[0];
    expect([rel.from_col, rel.from_field]).toEqual(["posts", "writer"]);
    const [first] = (await ok("GET", "/posts?filter=seq:eq:13&expand=writer")).items;
    expect(first._expand.writer.name).toBe("person 3");
    const badRef = await t.admin("POST", "/api/v1/posts", { headline: "new", writer: "nobody" });
    expect(badRef.status).toBe(422);
    expect(badRef.body.errors[0]).toMatchObject({ field: "writer", rule: "relation" });

    // Off while the types change back and forth (each change of a text field makes the index again).
    await ok("DELETE", "/admin/collections/posts/fts");

    // text → number ("12" → 12), with its index made again; then number → text (1 → "1").
    await ok("POST", "/admin/collections/posts/indexes", { fields: ["code"] }, 201);
    await ok("PATCH", "/admin/collections/posts/fields/code", { type: "number" });
    expect(await total("filter=code:gte:9990")).toBe(10);
    expect((await ok("GET", "/posts?sort=-code&limit=1")).items[0].code).toBe(9999);
    expect((await ok("GET", "/admin/collections/posts/indexes")).items.map((i: any) => i.fields)).toEqual([["headline"], ["seq"], ["code"]]);
    expect((await t.admin("POST", "/api/v1/posts", { headline: "x", code: "abc" })).status).toBe(422);
    await ok("PATCH", "/admin/collections/posts/fields/code", { type: "text" });
    expect((await bySeq([0, 42])).map((r: any) => r.code)).toEqual(["0", "42"]);
    expect(await total("filter=code:like:99%")).toBe(111);

    // text "true"/"false" → boolean and back; number → json; json → text (its JSON).
    await ok("PATCH", "/admin/collections/posts/fields/flag", { type: "boolean" });
    expect(await total("filter=flag:eq:true")).toBe(N / 2);
    await ok("PATCH", "/admin/collections/posts/fields/flag", { type: "text" });
    expect((await bySeq([1, 2])).map((r: any) => r.flag)).toEqual(["true", "false"]);
    await ok("PATCH", "/admin/collections/posts/fields/n", { type: "json" });
    await ok("PATCH", "/admin/collections/posts/fields/meta", { type: "text" });
    expect((await bySeq([6])).map((r: any) => [r.n, r.meta])).toEqual([[1.5, '{"i":6,"tags":["a"]}']]);
    // number → boolean: 1 and 0 only. json → number: JSON numbers.
    expect((await t.admin("PATCH", "/api/v1/admin/collections/posts/fields/seq", { type: "boolean" })).body).toEqual({
      error: expect.any(String),
      code: "conflict",
      count: N - 2,
    });
    await ok("PATCH", "/admin/collections/posts/fields/n", { type: "number" });
    expect(await total("filter=n:lt:1")).toBe(4);

    // Text that stops being text leaves the full-text index.
    await ok("POST", "/admin/collections/posts/fts", undefined, 201);
    expect(await total("search=word42")).toBe(100);
    const json = await ok("PATCH", "/admin/collections/posts/fields/headline", { type: "json" });
    expect(json.fts.fields).toEqual(["code", "flag", "meta"]);
    expect(await total("search=word42")).toBe(0);
    expect(await total("search=tags")).toBe(N);
    expect((await bySeq([7]))[0].headline).toBe("title 7 word7");

    // Dropped: the column and its values go.
    await ok("DELETE", "/admin/collections/posts/fields/extra");
    await ok("DELETE", "/admin/collections/posts/fields/meta");
    expect(await total("search=tags")).toBe(0);
    const [last] = await bySeq([9999]);
    expect(Object.keys(last).sort()).toEqual(["_created_at", "_deleted_at", "_id", "_owner_id", "_updated_at", "code", "flag", "headline", "n", "seq", "writer"]);
    expect(await fieldsOf("posts")).toEqual([
      { name: "seq", type: "number" },
      { name: "headline", type: "json" },
      { name: "code", type: "text" },
      { name: "flag", type: "text" },
      { name: "n", type: "number" },
      { name: "writer", type: "text" },
    ]);
    expect(await total("include_deleted=true")).toBe(N);
  });
});

describe("a change of type that fails leaves nothing changed", () => {
  test("values that do not convert: 409 with their count; converted values a unique index refuses (after the column was replaced): 409, and the old column, index and full-text index are back", async () => {
    await ok("POST", "/admin/collections", { name: "codes", rules: { read: "public" }, fields: [{ name: "seq", type: "number" }, { name: "code", type: "text" }] }, 201);
    // "1.0" and "1" are different texts; as numbers they are the same.
    await fill("codes", N, (i) => ({ seq: i, code: i === N - 1 ? "1.0" : i % 2500 === 7 ? `x${i}` : String(i) }));
    await ok("POST", "/admin/collections/codes/indexes", { fields: ["code"], unique: true }, 201);
    await ok("POST", "/admin/collections/codes/fts", undefined, 201);
    const before = await ok("GET", "/admin/collections/codes");

    const notNumbers = await t.admin("PATCH", "/api/v1/admin/collections/codes/fields/code", { type: "number" });
    expect({ status: notNumbers.status, body: notNumbers.body }).toEqual({ status: 409, body: { error: expect.stringContaining("4 values"), code: "conflict", count: 4 } });
    expect(await ok("GET", "/admin/collections/codes")).toEqual(before);

    for (const r of (await ok("GET", "/codes?filter=code:like:x%")).items) await ok("DELETE", `/admin/collections/codes/records/${r._id}`);
    const clash = await t.admin("PATCH", "/api/v1/admin/collections/codes/fields/code", { type: "number" });
    expect({ status: clash.status, code: clash.body.code }).toEqual({ status: 409, code: "unique_violation" });
    expect(await ok("GET", "/admin/collections/codes")).toEqual(before);
    expect((await bySeq([1, N - 1], "codes")).map((r: any) => r.code)).toEqual(["1", "1.0"]);
    expect(await total("filter=code:eq:1.0", "codes")).toBe(1);
    expect(await total("search=1.0", "codes")).toBeGreaterThan(0);
    const dup = await t.admin("POST", "/api/v1/codes", { code: "42" });
    expect({ status: dup.status, code: dup.body.code }).toEqual({ status: 409, code: "unique_violation" });
    expect(await total("include_deleted=true", "codes")).toBe(N - 4);
  });
});
