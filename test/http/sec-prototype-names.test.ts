import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";

// Field names that are also names of Object.prototype's members. A record, a body or a lookup keyed by a
// client's field name must never find the prototype's member: `?fields=x` once answered `"valueOf": false`
// for a field that held true and was not asked for.

const NAMES = ["constructor", "valueOf", "toString", "hasOwnProperty", "isPrototypeOf", "toLocaleString"] as const;
const OTHERS = (keep: string) => NAMES.filter((n) => n !== keep);

let t: TestApp;
let a: string;
let b: string;

beforeAll(async () => {
  t = createTestApp();
  await createCollection(t, "p", { read: "public", create: "public", update: "public", delete: "public" });
  const res = await t.admin("POST", "/api/v1/p", { ...Object.fromEntries(NAMES.map((n) => [n, true])), x: 1 });
  expect(res.status).toBe(201);
  a = res.body._id;
  const res2 = await t.admin("POST", "/api/v1/p", { ...Object.fromEntries(NAMES.map((n) => [n, false])), x: 2 });
  b = res2.body._id;
});
afterAll(() => t.close());

const ids = (res: { body: { items: { _id: string }[] } }) => res.body.items.map((r) => r._id);

describe("fields named like Object.prototype's members", () => {
  test("create stores them and answers them as sent", async () => {
    const res = await t.req("GET", `/api/v1/p/${a}`);
    expect(res.status).toBe(200);
    for (const n of NAMES) expect([n, res.body[n]]).toEqual([n, true]);
    const fields = (await t.admin("GET", "/api/v1/admin/collections/p")).body.fields;
    expect(fields).toEqual([...NAMES.map((name) => ({ name, type: "boolean" })), { name: "x", type: "number" }]);
  });

  test("fields= projects only what is asked for, on a list and a single read", async () => {
    const list = await t.req("GET", "/api/v1/p?fields=x");
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([{ _id: a, x: 1 }, { _id: b, x: 2 }]);
    for (const n of NAMES) {
      const one = await t.req("GET", `/api/v1/p?fields=${n},x`);
      expect(one.body.items).toEqual([{ _id: a, [n]: true, x: 1 }, { _id: b, [n]: false, x: 2 }]);
      const single = await t.req("GET", `/api/v1/p/${a}?fields=${n}`);
      expect(single.body).toEqual({ _id: a, [n]: true });
    }
    // A field the collection lacks is 400, whatever else is named (the request that once answered valueOf).
    expect((await t.req("GET", "/api/v1/p?fields=constructor,select")).status).toBe(400);
    expect((await t.req("GET", `/api/v1/p/${a}?fields=__proto__`)).status).toBe(400);
  });

  test("filters, sort, count and aggregate read the stored column", async () => {
    for (const n of NAMES) {
      expect(ids(await t.req("GET", `/api/v1/p?filter=${n}:eq:true`))).toEqual([a]);
      expect(ids(await t.req("GET", `/api/v1/p?filter[${n}]=false`))).toEqual([b]);
      expect(ids(await t.req("GET", `/api/v1/p?sort=-${n}`))).toEqual([a, b]);
      expect((await t.req("GET", `/api/v1/p/count?filter=${n}:eq:false`)).body).toEqual({ total: 1 });
      expect((await t.req("GET", `/api/v1/p/aggregate?fn=count&group_by=${n}`)).body).toEqual({ groups: [{ group: false, value: 1 }, { group: true, value: 1 }] });
    }
    expect((await t.req("GET", "/api/v1/p?filter=__proto__:eq:x")).status).toBe(400);
    expect((await t.req("GET", "/api/v1/p?sort=__proto__")).status).toBe(400);
  });

  test("an update changes the one field named and nothing else", async () => {
    const made = await t.req("POST", "/api/v1/p", { body: { valueOf: true, x: 3 } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ valueOf: true, constructor: null, toString: null, x: 3 });
    const res = await t.req("PATCH", `/api/v1/p/${made.body._id}`, { body: { valueOf: false, toString: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ valueOf: false, toString: true, constructor: null, hasOwnProperty: null, x: 3 });
    const again = await t.req("GET", `/api/v1/p/${made.body._id}?fields=${OTHERS("toString").join(",")}`);
    expect(again.body).toEqual({ _id: made.body._id, ...Object.fromEntries(OTHERS("toString").map((n) => [n, n === "valueOf" ? false : null])) });
    await t.req("DELETE", `/api/v1/p/${made.body._id}`);
  });

  test("bulk and batch write them like any field", async () => {
    const bulk = await t.req("POST", "/api/v1/p/bulk", { body: [{ constructor: true, x: 4 }, { hasOwnProperty: true, x: 5 }] });
    expect(bulk.status).toBe(201);
    const [c, d] = bulk.body;
    expect(c).toMatchObject({ constructor: true, hasOwnProperty: null, x: 4 });
    expect(d).toMatchObject({ constructor: null, hasOwnProperty: true, x: 5 });
    const batch = await t.req("POST", "/api/v1/p/batch", {
      body: { operations: [{ op: "update", id: c._id, data: { constructor: false, toLocaleString: true } }, { op: "delete", id: d._id }] },
    });
    expect(batch.status).toBe(200);
    expect((await t.req("GET", `/api/v1/p/${c._id}?fields=constructor,toLocaleString,valueOf`)).body).toEqual({ _id: c._id, constructor: false, toLocaleString: true, valueOf: null });
    await t.req("DELETE", `/api/v1/p/${c._id}`);
  });

  test("field rules and relations may carry these names", async () => {
    await createCollection(t, "q", { read: "public", create: "public", update: "public" }, { field_rules: [{ field: "valueOf", required: true, min: 2 }] });
    expect((await t.req("POST", "/api/v1/q", { body: { n: 1 } })).body).toEqual({ errors: [{ field: "valueOf", rule: "required", message: '"valueOf" is required.' }] });
    expect((await t.req("POST", "/api/v1/q", { body: { valueOf: "a" } })).body.errors[0].rule).toBe("min");
    const q = await t.req("POST", "/api/v1/q", { body: { valueOf: "ok", n: 1 } });
    expect(q.status).toBe(201);
    expect((await t.req("GET", "/api/v1/q?fields=n")).body.items).toEqual([{ _id: q.body._id, n: 1 }]);
    // A one relation named toString from r to q, and its expand.
    await createCollection(t, "r", { read: "public", create: "public" });
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "r", from_field: "toString", to_col: "q", type: "one" })).status).toBe(201);
    const r = await t.req("POST", "/api/v1/r", { body: { toString: q.body._id } });
    expect(r.status).toBe(201);
    expect((await t.req("GET", `/api/v1/r/${r.body._id}?expand=toString`)).body._expand).toEqual({ toString: { ...q.body } });
    expect((await t.req("GET", `/api/v1/r?expand=constructor`)).status).toBe(400);
    // A many relation back from q, named valueOf's neighbour: a virtual field read and expanded.
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "q", from_field: "hasOwnProperty", to_col: "r", to_field: "toString", type: "many" })).status).toBe(201);
    const back = await t.req("GET", `/api/v1/q/${q.body._id}?expand=hasOwnProperty&fields=hasOwnProperty`);
    expect(back.body).toEqual({ _id: q.body._id, hasOwnProperty: [r.body._id], _expand: { hasOwnProperty: [r.body] } });
  });

  test("__proto__ starts with _: a system name, ignored in a body and refused in field rules", async () => {
    const res = await t.req("POST", "/api/v1/p", { body: '{"__proto__": {"x": 9}, "x": 7}' });
    expect(res.status).toBe(201);
    expect(res.body.x).toBe(7);
    expect(Object.keys(res.body)).not.toContain("__proto__");
    const rule = await t.admin("PUT", "/api/v1/admin/collections/p/rules", { field_rules: [{ field: "__proto__", required: true }] });
    expect(rule.status).toBe(400);
    await t.req("DELETE", `/api/v1/p/${res.body._id}`);
  });

  test("metadata and settings treat these names as plain keys", async () => {
    const reg = await t.req("POST", "/api/v1/auth/register", { body: { email: "meta@example.com", password: "password123" } });
    const metadata = '{"metadata": {"constructor": 1, "valueOf": {"toString": true}, "__proto__": {"polluted": true}}}';
    const me = await t.req("PATCH", "/api/v1/auth/me", { body: metadata, token: reg.body.access_token });
    expect(me.status).toBe(200);
    expect(me.text).toContain('"__proto__":{"polluted":true}');
    expect(me.body.metadata.constructor).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    for (const key of ["constructor", "toString", "__proto__"]) {
      const res = await t.admin("PATCH", "/api/v1/admin/settings", JSON.parse(`{"${key}": "x"}`));
      expect([key, res.status, res.body.code]).toEqual([key, 400, "bad_request"]);
    }
    // A query flag read as a boolean: a prototype member's name is no boolean.
    expect((await t.req("GET", "/api/v1/p?total=constructor")).body).toEqual({ error: "total must be true or false", code: "bad_request" });
  });
});
