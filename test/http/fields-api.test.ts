import { expect } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { scenarios } from "../helpers/scenarios.ts";

// The admin API of declared fields (CONTRACT §13) as a table of calls: status, body and the change events
// (none: a field's change is not a record's). Each row makes its own collection.

let seq = 0;
/** A fresh collection with the given fields and records; its name. */
async function collectionWith(t: TestApp, fields: { name: string; type: string }[], records: Record<string, unknown>[] = []): Promise<string> {
  const name = `c${++seq}`;
  const made = await t.admin("POST", "/api/v1/admin/collections", { name, fields, rules: { read: "public", create: "public" } });
  if (made.status !== 201) throw new Error(`create ${name}: ${made.status} ${made.text}`);
  if (records.length) {
    const bulk = await t.admin("POST", `/api/v1/${name}/bulk`, records);
    if (bulk.status !== 201) throw new Error(`bulk ${name}: ${bulk.status} ${bulk.text}`);
  }
  return name;
}

const error = (code: string, more: Record<string, unknown> = {}) => ({ error: expect.any(String), code, ...more });
const fieldsOf = (body: { fields: unknown[] }) => body.fields;

scenarios("declared fields: POST, PATCH and DELETE /admin/collections/:name/fields", {}, [
  {
    name: "a collection created with fields has them, in order, and they read null on every record",
    method: "POST",
    url: "/api/v1/admin/collections",
    body: { name: "declared", fields: [{ name: "title", type: "text" }, { name: "n", type: "number" }, { name: "done", type: "boolean" }, { name: "meta", type: "json" }] },
    status: 201,
    contains: { name: "declared", fields: [{ name: "title", type: "text" }, { name: "n", type: "number" }, { name: "done", type: "boolean" }, { name: "meta", type: "json" }] },
    events: [],
    after: async ({ t }) => {
      const rec = await t.admin("POST", "/api/v1/declared", {});
      expect(rec.body).toMatchObject({ title: null, n: null, done: null, meta: null });
    },
  },
  {
    name: "a bad field on create is 400 and makes nothing",
    method: "POST",
    url: "/api/v1/admin/collections",
    body: { name: "badfields", fields: [{ name: "ok", type: "text" }, { name: "_x", type: "text" }] },
    status: 400,
    answer: error("bad_request"),
    events: [],
    after: async ({ t }) => expect((await t.admin("GET", "/api/v1/admin/collections/badfields")).status).toBe(404),
  },
  ...[
    [{ name: "t", type: "date" }, "an unknown type"],
    [{ name: "t" }, "no type"],
    [{ type: "text" }, "no name"],
    [{ name: "9t", type: "text" }, "an invalid name"],
    [{ name: "t", type: "text", max: 3 }, "an option the type does not take"],
    ['"t"', "a JSON string"],
  ].map(([body, what]) => ({
    name: `POST …/fields with ${what} is 400`,
    before: ({ t }: { t: TestApp }) => collectionWith(t, []),
    method: "POST",
    url: ({ v }: { v: string }) => `/api/v1/admin/collections/${v}/fields`,
    body: body as object,
    status: 400,
    answer: error("bad_request"),
    events: [],
  })),
  {
    name: "POST …/fields declares a field: 201 the collection, and the field is filterable, sortable and indexable with no record",
    before: ({ t }) => collectionWith(t, [{ name: "a", type: "text" }]),
    method: "POST",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields`,
    body: { name: "score", type: "number" },
    status: 201,
    contains: { fields: [{ name: "a", type: "text" }, { name: "score", type: "number" }] },
    events: [],
    after: async ({ t, v }) => {
      expect((await t.req("GET", `/api/v1/${v}?filter=score:gt:1&sort=-score`)).body).toMatchObject({ items: [], total: 0 });
      expect((await t.req("GET", `/api/v1/${v}/aggregate?fn=sum&field=score`)).body).toEqual({ value: 0 });
      expect((await t.admin("POST", `/api/v1/admin/collections/${v}/indexes`, { fields: ["score"] })).status).toBe(201);
      expect((await t.req("POST", `/api/v1/${v}`, { body: { score: "high" } })).status).toBe(422);
    },
  },
  {
    name: "POST …/fields with a name taken (letter case aside) is 409",
    before: ({ t }) => collectionWith(t, [{ name: "title", type: "text" }]),
    method: "POST",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields`,
    body: { name: "Title", type: "number" },
    status: 409,
    answer: error("conflict"),
    events: [],
  },
  {
    name: "POST …/fields on an unknown collection is 404",
    method: "POST",
    url: "/api/v1/admin/collections/nosuch/fields",
    body: { name: "a", type: "text" },
    status: 404,
    answer: error("not_found"),
    events: [],
  },
  {
    name: "POST …/fields without admin credentials is 401",
    as: "anonymous",
    method: "POST",
    url: "/api/v1/admin/collections/nosuch/fields",
    body: { name: "a", type: "text" },
    status: 401,
    events: [],
  },
  {
    name: "PATCH renames a field: its values stay; 200 the collection",
    before: ({ t }) => collectionWith(t, [{ name: "title", type: "text" }], [{ title: "one" }, { title: "two" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/title`,
    body: { name: "headline" },
    status: 200,
    contains: { fields: [{ name: "headline", type: "text" }] },
    events: [],
    after: async ({ t, v, res }) => {
      expect(fieldsOf(res.body)).toEqual([{ name: "headline", type: "text" }]);
      const list = await t.req("GET", `/api/v1/${v}?sort=headline`);
      expect(list.body.items.map((r: any) => [r.headline, "title" in r])).toEqual([["one", false], ["two", false]]);
      expect((await t.req("GET", `/api/v1/${v}?filter=title:eq:one`)).status).toBe(400);
    },
  },
  {
    name: "PATCH changes a type when every value converts: \"12\" becomes 12",
    before: ({ t }) => collectionWith(t, [{ name: "n", type: "text" }], [{ n: "12" }, { n: " -1.5e3 " }, { n: null }, {}]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/n`,
    body: { type: "number" },
    status: 200,
    contains: { fields: [{ name: "n", type: "number" }] },
    events: [],
    after: async ({ t, v }) => {
      const list = await t.req("GET", `/api/v1/${v}?sort=n`);
      expect(list.body.items.map((r: any) => r.n)).toEqual([null, null, -1500, 12]);
    },
  },
  ...(
    [
      ["number", "text", [1e-7, 1e21, 0.1 + 0.2, 1e16, -0, 42, 2.5], ["1e-7", "1e+21", "0.30000000000000004", "10000000000000000", "0", "42", "2.5"]],
      ["text", "number", ["1e-400", " +5 ", ".5", "5.", "1E3", "-0.0"], [0, 5, 0.5, 5, 1000, -0]],
      ["text", "json", ['say "hi"\n', "ü\u0001", ""], ['say "hi"\n', "ü\u0001", ""]],
      ["json", "text", [{ a: [1, "x"] }, [1, 2]], ['{"a":[1,"x"]}', "[1,2]"]],
      ["boolean", "number", [true, false], [1, 0]],
      ["number", "boolean", [1, 0], [true, false]],
      ["text", "boolean", ["true", " FALSE "], [true, false]],
    ] as [string, string, unknown[], unknown[]][]
  ).map(([from, to, values, want]) => ({
    name: `PATCH ${from} → ${to} converts each value as the contract says, alike on both engines`,
    before: ({ t }: { t: TestApp }) => collectionWith(t, [{ name: "seq", type: "number" }, { name: "v", type: from }], values.map((v, seq) => ({ seq, v }))),
    method: "PATCH",
    url: ({ v }: { v: string }) => `/api/v1/admin/collections/${v}/fields/v`,
    body: { type: to },
    status: 200,
    events: [],
    after: async ({ t, v }: { t: TestApp; v: string }) => {
      const got = (await t.req("GET", `/api/v1/${v}?sort=seq`)).body.items.map((r: any) => r.v);
      // -0 reads back as 0 or -0 depending on the engine's storage: the value is zero either way.
      expect(got.map((x: unknown) => (Object.is(x, -0) ? 0 : x))).toEqual(want.map((x) => (Object.is(x, -0) ? 0 : x)));
    },
  })),
  {
    name: "a text field made json holds its strings as JSON strings; made text again, they are as they were",
    before: ({ t }) => collectionWith(t, [{ name: "v", type: "text" }], [{ v: "a" }, { v: '{"not":"parsed"}' }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/v`,
    body: { type: "json" },
    status: 200,
    events: [],
    after: async ({ t, v }) => {
      expect((await t.req("GET", `/api/v1/${v}?sort=_id`)).body.items.map((r: any) => r.v)).toEqual(["a", '{"not":"parsed"}']);
      expect((await t.admin("PATCH", `/api/v1/admin/collections/${v}/fields/v`, { type: "number" })).body).toEqual({ error: expect.any(String), code: "conflict", count: 2 });
      expect((await t.admin("PATCH", `/api/v1/admin/collections/${v}/fields/v`, { type: "text" })).status).toBe(200);
      expect((await t.req("GET", `/api/v1/${v}?sort=_id`)).body.items.map((r: any) => r.v)).toEqual(["a", '{"not":"parsed"}']);
    },
  },
  {
    name: "PATCH changing a type where values do not convert is 409 with their count, and nothing changes",
    before: ({ t }) => collectionWith(t, [{ name: "n", type: "text" }], [{ n: "12" }, { n: "twelve" }, { n: "1,5" }, { n: "7" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/n`,
    body: { type: "number" },
    status: 409,
    answer: error("conflict", { count: 2 }),
    events: [],
    after: async ({ t, v }) => {
      expect((await t.admin("GET", `/api/v1/admin/collections/${v}`)).body.fields).toEqual([{ name: "n", type: "text" }]);
      expect((await t.req("GET", `/api/v1/${v}?sort=n`)).body.items.map((r: any) => r.n)).toEqual(["1,5", "12", "7", "twelve"]);
    },
  },
  {
    name: "PATCH with a rename and a type does both",
    before: ({ t }) => collectionWith(t, [{ name: "flag", type: "text" }], [{ flag: "true" }, { flag: "false" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/flag`,
    body: { name: "done", type: "boolean" },
    status: 200,
    contains: { fields: [{ name: "done", type: "boolean" }] },
    events: [],
    after: async ({ t, v }) => expect((await t.req("GET", `/api/v1/${v}?sort=_id`)).body.items.map((r: any) => r.done)).toEqual([true, false]),
  },
  {
    name: "PATCH renaming onto another field's name is 409 and nothing changes",
    before: ({ t }) => collectionWith(t, [{ name: "a", type: "text" }, { name: "b", type: "number" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/a`,
    body: { name: "B", type: "json" },
    status: 409,
    answer: error("conflict"),
    events: [],
    after: async ({ t, v }) => expect((await t.admin("GET", `/api/v1/admin/collections/${v}`)).body.fields).toEqual([{ name: "a", type: "text" }, { name: "b", type: "number" }]),
  },
  {
    name: "PATCH only changing the letter case of a name renames it",
    before: ({ t }) => collectionWith(t, [{ name: "title", type: "text" }], [{ title: "x" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/title`,
    body: { name: "Title" },
    status: 200,
    contains: { fields: [{ name: "Title", type: "text" }] },
    events: [],
    after: async ({ t, v }) => expect((await t.req("GET", `/api/v1/${v}`)).body.items[0].Title).toBe("x"),
  },
  ...[
    [{}, "an empty body", 400, "bad_request"],
    [{ name: "x", size: 3 }, "an unknown key", 400, "bad_request"],
    [{ name: "9x" }, "an invalid name", 400, "bad_request"],
    [{ name: 5 }, "a name that is not a string", 400, "bad_request"],
    [{ type: "date" }, "an unknown type", 400, "bad_request"],
    ["[", "malformed JSON", 400, "invalid_json"],
  ].map(([body, what, status, code]) => ({
    name: `PATCH with ${what} is ${status}`,
    before: ({ t }: { t: TestApp }) => collectionWith(t, [{ name: "a", type: "text" }]),
    method: "PATCH",
    url: ({ v }: { v: string }) => `/api/v1/admin/collections/${v}/fields/a`,
    body: body as object,
    status: status as number,
    answer: error(code as string),
    events: [],
  })),
  {
    name: "PATCH of an unknown field is 404; of a system field 400",
    before: ({ t }) => collectionWith(t, [{ name: "a", type: "text" }]),
    method: "PATCH",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/nope`,
    body: { name: "b" },
    status: 404,
    answer: error("not_found"),
    events: [],
    after: async ({ t, v }) => {
      const sys = await t.admin("PATCH", `/api/v1/admin/collections/${v}/fields/_owner_id`, { name: "owner" });
      expect({ status: sys.status, body: sys.body }).toEqual({ status: 400, body: error("bad_request") });
    },
  },
  {
    name: "DELETE drops the field and its values: 200 the collection; a later value makes the field again by its type",
    before: ({ t }) => collectionWith(t, [{ name: "a", type: "text" }, { name: "b", type: "number" }], [{ a: "x", b: 1 }]),
    method: "DELETE",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/b`,
    status: 200,
    contains: { fields: [{ name: "a", type: "text" }] },
    events: [],
    after: async ({ t, v }) => {
      const [rec] = (await t.req("GET", `/api/v1/${v}`)).body.items;
      expect(rec.a).toBe("x");
      expect("b" in rec).toBe(false);
      expect((await t.req("POST", `/api/v1/${v}`, { body: { b: "now text" } })).status).toBe(201);
      expect((await t.admin("GET", `/api/v1/admin/collections/${v}`)).body.fields).toEqual([{ name: "a", type: "text" }, { name: "b", type: "text" }]);
      expect((await t.req("GET", `/api/v1/${v}?filter=b:eq:null`)).body.total).toBe(1);
    },
  },
  {
    name: "DELETE is 409 while an index names the field",
    before: async ({ t }) => {
      const v = await collectionWith(t, [{ name: "a", type: "text" }]);
      await t.admin("POST", `/api/v1/admin/collections/${v}/indexes`, { fields: ["a"] });
      return v;
    },
    method: "DELETE",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/a`,
    status: 409,
    answer: error("conflict"),
    events: [],
  },
  {
    name: "DELETE is 409 while a relation names the field; so is a change of its type",
    before: async ({ t }) => {
      const target = await collectionWith(t, []);
      const v = await collectionWith(t, [{ name: "owner", type: "text" }]);
      const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: v, from_field: "owner", to_col: target, type: "one" });
      if (rel.status !== 201) throw new Error(rel.text);
      return v;
    },
    method: "DELETE",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/owner`,
    status: 409,
    answer: error("conflict"),
    events: [],
    after: async ({ t, v }) => {
      const retype = await t.admin("PATCH", `/api/v1/admin/collections/${v}/fields/owner`, { type: "number" });
      expect({ status: retype.status, body: retype.body }).toEqual({ status: 409, body: error("conflict") });
    },
  },
  {
    name: "DELETE of a field that field rules name drops those rules with it",
    before: async ({ t }) => {
      const v = await collectionWith(t, [{ name: "a", type: "text" }, { name: "b", type: "text" }]);
      await t.admin("PUT", `/api/v1/admin/collections/${v}/rules`, { field_rules: [{ field: "a", required: true }, { field: "b", min: 2 }] });
      return v;
    },
    method: "DELETE",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/a`,
    status: 200,
    contains: { field_rules: [{ field: "b", min: 2 }] },
    events: [],
    after: async ({ t, v }) => expect((await t.req("POST", `/api/v1/${v}`, { body: { b: "ok" } })).status).toBe(201),
  },
  {
    name: "DELETE of an unknown field is 404",
    before: ({ t }) => collectionWith(t, []),
    method: "DELETE",
    url: ({ v }) => `/api/v1/admin/collections/${v}/fields/nope`,
    status: 404,
    answer: error("not_found"),
    events: [],
  },
]);
