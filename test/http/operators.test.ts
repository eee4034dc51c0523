import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { scenarios, type TableState } from "../helpers/scenarios.ts";

// Atomic operators on PATCH and batch updates (CONTRACT §15): "n+"/"n-" computed by the database, "tags+"/"tags-"
// on json arrays and many_via fields; field rules hold for the result; the events carry the resulting record.

const api = (path: string) => `/api/v1${path}`;
type V = Record<string, any>;

async function make(t: TestApp, col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", api(`/${col}`), body);
  if (res.status !== 201) throw new Error(`create in ${col} failed: ${res.status} ${res.text}`);
  return res.body as V;
}

const read = async (t: TestApp, col: string, id: string) => (await t.admin("GET", api(`/${col}/${id}`))).body as V;

async function setup({ t }: Omit<TableState<undefined>, "s">) {
  await createCollection(t, "items", { read: "public", create: "public", update: "public", delete: "public" }, { field_rules: [{ field: "stock", min: 0 }] });
  await make(t, "items", { stock: 1, tags: ["x"], title: "t", meta: { a: 1 }, price: 1.5 });
  await createCollection(t, "labels", { read: "public", create: "public", update: "public", delete: "public" });
  const res = await t.admin("POST", api("/admin/relations"), { from_col: "items", from_field: "labels", to_col: "labels", type: "many_via" });
  if (res.status !== 201) throw new Error(`relation failed: ${res.status} ${res.text}`);
}

const item = (t: TestApp, extra: Record<string, unknown> = {}) => make(t, "items", { stock: 10, tags: ["a", "b"], ...extra });

scenarios<undefined>("atomic operators", { setup }, [
  {
    name: '"stock-": 3 subtracts in the database; the update event carries the resulting record',
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock-": 3 },
    status: 200,
    contains: { stock: 7, tags: ["a", "b"] },
    events: ({ v }) => [{ collection: "items", action: "update", id: (v as V)._id, record: { stock: 7 }, previous: { stock: 10 } }],
  },
  {
    name: '"stock+": 2.5 adds, with another field set plainly in the same patch',
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock+": 2.5, title: "more" },
    status: 200,
    contains: { stock: 12.5, title: "more" },
    events: ({ v }) => [`items:update:${(v as V)._id}`],
  },
  {
    name: "an operator on a null number counts it as 0",
    before: ({ t }) => item(t, { stock: null }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock+": 4 },
    status: 200,
    contains: { stock: 4 },
    events: ({ v }) => [`items:update:${(v as V)._id}`],
  },
  {
    name: "a result that breaks a field rule (min 0) is 422 and nothing changes",
    before: ({ t }) => item(t, { stock: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock-": 2, title: "never" },
    status: 422,
    answer: { errors: [{ field: "stock", rule: "min", message: '"stock" must be at least 0.' }] },
    events: [],
    after: async ({ t, v }) => expect(await read(t, "items", (v as V)._id)).toEqual(v),
  },
  {
    name: "an operator beside a plain value of the same field is 400",
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { stock: 1, "stock+": 1 },
    status: 400,
    answer: { error: '"stock+" and "stock" both change "stock"; send one of them', code: "bad_request" },
    events: [],
  },
  {
    name: "both operators of one field is 400",
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock+": 1, "stock-": 1 },
    status: 400,
    contains: { code: "bad_request" },
    events: [],
  },
  {
    name: "a sum past a number's range is 422 rule type on both engines, and nothing changes",
    before: ({ t }) => item(t, { price: 1e308 }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "price+": 1e308, title: "never" },
    status: 422,
    answer: { errors: [{ field: "price", rule: "type", message: '"price" would leave the range of a number.' }] },
    events: [],
    after: async ({ t, v }) => expect(await read(t, "items", (v as V)._id)).toEqual(v),
  },
  {
    name: "a number operator with a value that is no number is 422",
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "stock+": "1" },
    status: 422,
    answer: { errors: [{ field: "stock+", rule: "type", message: '"stock+" must be a number.' }] },
    events: [],
  },
  {
    name: "an operator on a text field is 422",
    before: ({ t }) => item(t, { title: "x" }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "title+": 1 },
    status: 422,
    answer: { errors: [{ field: "title+", rule: "type", message: '"title" is a text field: "+" applies to number, json array and many_via fields.' }] },
    events: [],
  },
  {
    name: "an operator on an unknown field is 422 and adds no field",
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "nosuch+": 1 },
    status: 422,
    answer: { errors: [{ field: "nosuch+", rule: "type", message: '"nosuch" is not a field of "items".' }] },
    events: [],
    after: async ({ t, v }) => expect(Object.hasOwn(await read(t, "items", (v as V)._id), "nosuch")).toBe(false),
  },
  {
    name: '"tags+" adds the values a json array lacks (one value or a list)',
    before: ({ t }) => item(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "tags+": ["b", "c", { k: 1 }] },
    status: 200,
    contains: { tags: ["a", "b", "c", { k: 1 }] },
    events: ({ v }) => [{ collection: "items", action: "update", id: (v as V)._id, record: { tags: ["a", "b", "c", { k: 1 }] } }],
  },
  {
    name: '"tags-" removes every item equal to a value',
    before: ({ t }) => item(t, { tags: ["a", "b", "a", 1] }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "tags-": "a" },
    status: 200,
    contains: { tags: ["b", 1] },
    events: ({ v }) => [`items:update:${(v as V)._id}`],
  },
  {
    name: '"tags+" on a json field holding an object is 422',
    before: ({ t }) => item(t, { meta: { a: 1 } }),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    body: { "meta+": 1 },
    status: 422,
    answer: { errors: [{ field: "meta+", rule: "type", message: '"meta" holds no array: "+" adds to or removes from arrays.' }] },
    events: [],
  },
  {
    name: '"labels+" and "labels-" link and unlink records of a many_via field',
    before: async ({ t }) => {
      const [a, b, c] = [await make(t, "labels", { n: 1 }), await make(t, "labels", { n: 2 }), await make(t, "labels", { n: 3 })];
      const rec = await make(t, "items", { stock: 1, labels: [a._id, b._id] });
      return { rec, a, b, c };
    },
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V).rec._id}`),
    body: ({ v }) => ({ "labels+": (v as V).c._id }),
    status: 200,
    contains: ({ v }) => ({ labels: [(v as V).a._id, (v as V).b._id, (v as V).c._id] }),
    events: ({ v }) => [{ collection: "items", action: "update", id: (v as V).rec._id, record: { labels: [(v as V).a._id, (v as V).b._id, (v as V).c._id] } }],
    after: async ({ t, v }) => {
      const x = v as V;
      const res = await t.admin("PATCH", api(`/items/${x.rec._id}`), { "labels-": [x.a._id, x.c._id] });
      expect({ status: res.status, labels: res.body.labels }).toEqual({ status: 200, labels: [x.b._id] });
    },
  },
  {
    name: "a batch update takes operators; a result below min fails the whole batch",
    before: async ({ t }) => ({ a: await item(t, { stock: 5 }), b: await item(t, { stock: 1 }) }),
    method: "POST",
    url: api("/items/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "update", id: (v as V).a._id, data: { "stock-": 1 } },
        { op: "update", id: (v as V).b._id, data: { "stock-": 2 } },
      ],
    }),
    status: 400,
    answer: { error: 'operation 1 (update): "stock" must be at least 0.', code: "batch_failed", index: 1, op: "update" },
    events: [],
    after: async ({ t, v }) => expect((await read(t, "items", (v as V).a._id)).stock).toBe(5),
  },
  {
    name: "a batch update with operators emits the resulting records",
    before: ({ t }) => item(t, { stock: 5 }),
    method: "POST",
    url: api("/items/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "update", id: (v as V)._id, data: { "stock-": 1 } },
        { op: "update", id: (v as V)._id, data: { "stock-": 1, "tags+": "z" } },
      ],
    }),
    status: 200,
    contains: { results: [{ op: "update", record: { stock: 4 } }, { op: "update", record: { stock: 3, tags: ["a", "b", "z"] } }] },
    current: false,
    events: ({ v }) => [
      { collection: "items", action: "update", id: (v as V)._id, record: { stock: 4 } },
      { collection: "items", action: "update", id: (v as V)._id, record: { stock: 3, tags: ["a", "b", "z"] } },
    ],
  },
]);

describe("atomic operators under concurrency", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = createTestApp();
    await t.ready;
    await createCollection(t, "stock", { read: "public", create: "public", update: "public", delete: "public" }, { field_rules: [{ field: "n", min: 0 }] });
  });
  afterAll(() => t.close());

  test('50 concurrent "n-": 1 on a stock of 10 with min 0: exactly 10 succeed, the rest 422, the stock ends at 0', async () => {
    const rec = await make(t, "stock", { n: 10 });
    const answers = await Promise.all(Array.from({ length: 50 }, () => t.req("PATCH", api(`/stock/${rec._id}`), { body: { "n-": 1 } })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBe(10);
    expect(statuses.filter((s) => s === 422).length).toBe(40);
    expect((await read(t, "stock", rec._id)).n).toBe(0);
    // Each success answered a distinct stock: no two decrements saw the same value.
    expect(answers.filter((r) => r.status === 200).map((r) => r.body.n).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  test('40 concurrent "n+": 1 lose no update', async () => {
    const rec = await make(t, "stock", { n: 0 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => t.req("PATCH", api(`/stock/${rec._id}`), { body: { "n+": 1 } })));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect((await read(t, "stock", rec._id)).n).toBe(40);
  });
});
