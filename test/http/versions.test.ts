import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { scenarios, type TableState } from "../helpers/scenarios.ts";

// Record versions (CONTRACT §15): every single-record answer carries `ETag: "<version>"`, the version moves on
// every update, delete and restore (the test clock stands still, so two writes share one millisecond), and
// `If-Match` makes a write conditional: 412 precondition_failed when stale, checked in the write itself.

const api = (path: string) => `/api/v1${path}`;
const PRECONDITION = { error: "the record has changed since the version in If-Match", code: "precondition_failed" };

async function make(t: TestApp, body: Record<string, unknown> = { n: 1 }) {
  const res = await t.admin("POST", api("/items"), body);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any>;
}

/** A record written twice after its create, so its first version is stale. */
async function changed(t: TestApp) {
  const first = await make(t);
  const second = (await t.admin("PATCH", api(`/items/${first._id}`), { n: 2 })).body as Record<string, any>;
  return { first, second };
}

async function deletedRecord(t: TestApp) {
  const rec = await make(t);
  return (await t.admin("DELETE", api(`/items/${rec._id}`))).body as Record<string, any>;
}

const read = async (t: TestApp, id: string) => (await t.admin("GET", api(`/items/${id}?include_deleted=true`))).body as Record<string, any>;
const tag = (rec: Record<string, any>) => `"${rec._updated_at}"`;

async function setup({ t }: Omit<TableState<undefined>, "s">) {
  await createCollection(t, "items", { read: "public", create: "public", update: "public", delete: "public" });
}

type V = Record<string, any>;

scenarios<undefined>("versions and If-Match", { setup }, [
  {
    name: "a create answers the record's version as its ETag",
    method: "POST",
    url: api("/items"),
    body: { n: 1 },
    status: 201,
    events: ({ res }) => [`items:create:${res.body._id}`],
    after: ({ res }) => expect(res.headers.get("etag")).toBe(tag(res.body)),
  },
  {
    name: "a read answers the record's version as its ETag",
    before: ({ t }) => make(t),
    method: "GET",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    status: 200,
    events: [],
    after: ({ res, v }) => expect(res.headers.get("etag")).toBe(tag(v as V)),
  },
  {
    name: "an anonymous read without a query string (the fast path) carries the ETag too",
    before: ({ t }) => make(t),
    as: "anonymous",
    method: "GET",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    status: 200,
    events: [],
    after: ({ res, v }) => expect(res.headers.get("etag")).toBe(tag(v as V)),
  },
  {
    name: "a read with If-None-Match naming the current version answers 304 without a body",
    before: ({ t }) => make(t),
    as: "anonymous",
    method: "GET",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    headers: ({ v }) => ({ "if-none-match": tag(v as V) }),
    status: 304,
    events: [],
    after: ({ res, v }) => {
      expect(res.text).toBe("");
      expect(res.headers.get("etag")).toBe(tag(v as V));
    },
  },
  {
    name: "a read with If-None-Match naming an old version answers 200 with the record",
    before: ({ t }) => changed(t),
    method: "GET",
    url: ({ v }) => api(`/items/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-none-match": tag((v as V).first) }),
    status: 200,
    answer: ({ v }) => (v as V).second,
    events: [],
  },
  {
    name: "an update moves the version even within the same millisecond, and answers the new ETag",
    before: ({ t }) => make(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    headers: ({ v }) => ({ "if-match": tag(v as V) }),
    body: { n: 5 },
    status: 200,
    contains: { n: 5 },
    events: ({ v, res }) => [{ collection: "items", action: "update", id: (v as V)._id, record: { n: 5, _updated_at: res.body._updated_at } }],
    after: ({ res, v, t }) => {
      expect(res.body._updated_at).toBeGreaterThan((v as V)._updated_at);
      expect(res.headers.get("etag")).toBe(tag(res.body));
      expect(t.ctx.clock.now()).toBe((v as V)._updated_at);
    },
  },
  {
    name: "an update with a stale If-Match answers 412 and changes nothing",
    before: ({ t }) => changed(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-match": tag((v as V).first) }),
    body: { n: 9 },
    status: 412,
    answer: PRECONDITION,
    events: [],
    after: async ({ t, v }) => expect(await read(t, (v as V).first._id)).toEqual((v as V).second),
  },
  {
    name: "If-Match may list several versions; one current is enough",
    before: ({ t }) => changed(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-match": `${tag((v as V).first)}, ${tag((v as V).second)}` }),
    body: { n: 3 },
    status: 200,
    events: ({ v }) => [`items:update:${(v as V).first._id}`],
  },
  {
    name: "If-Match: * matches any existing record",
    before: ({ t }) => changed(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V).first._id}`),
    headers: { "if-match": "*" },
    body: { n: 4 },
    status: 200,
    contains: { n: 4 },
    events: ({ v }) => [`items:update:${(v as V).first._id}`],
  },
  {
    name: "a weak tag never matches If-Match (a precondition compares strongly): 412",
    before: ({ t }) => make(t),
    method: "PATCH",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    headers: ({ v }) => ({ "if-match": `W/${tag(v as V)}` }),
    body: { n: 4 },
    status: 412,
    answer: PRECONDITION,
    events: [],
  },
  {
    name: "If-Match on an unknown record answers 404, not 412",
    method: "PATCH",
    url: api("/items/01KAAAAAAAAAAAAAAAAAAAAAAA"),
    headers: { "if-match": "*" },
    body: { n: 4 },
    status: 404,
    events: [],
  },
  {
    name: "a delete sets _updated_at, moves the version and answers the new ETag",
    before: ({ t }) => make(t),
    method: "DELETE",
    url: ({ v }) => api(`/items/${(v as V)._id}`),
    headers: ({ v }) => ({ "if-match": tag(v as V) }),
    status: 200,
    events: ({ v, res }) => [{ collection: "items", action: "delete", id: (v as V)._id, record: { _updated_at: res.body._updated_at, _deleted_at: res.body._deleted_at } }],
    after: ({ res, v }) => {
      expect(res.body._updated_at).toBeGreaterThan((v as V)._updated_at);
      expect(res.body._deleted_at).toBe((v as V)._updated_at);
      expect(res.headers.get("etag")).toBe(tag(res.body));
    },
  },
  {
    name: "a delete with a stale If-Match answers 412 and leaves the record active",
    before: ({ t }) => changed(t),
    method: "DELETE",
    url: ({ v }) => api(`/items/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-match": tag((v as V).first) }),
    status: 412,
    answer: PRECONDITION,
    events: [],
    after: async ({ t, v }) => expect(await read(t, (v as V).first._id)).toEqual((v as V).second),
  },
  {
    name: "a restore sets _updated_at, moves the version and answers the new ETag",
    before: ({ t }) => deletedRecord(t),
    method: "POST",
    url: ({ v }) => api(`/items/${(v as V)._id}/restore`),
    headers: ({ v }) => ({ "if-match": tag(v as V) }),
    status: 200,
    contains: { _deleted_at: null },
    events: ({ v, res }) => [{ collection: "items", action: "restore", id: (v as V)._id, record: { _updated_at: res.body._updated_at, _deleted_at: null } }],
    after: ({ res, v }) => {
      expect(res.body._updated_at).toBeGreaterThan((v as V)._updated_at);
      expect(res.headers.get("etag")).toBe(tag(res.body));
    },
  },
  {
    name: "a restore with a stale If-Match answers 412 and leaves the record deleted",
    before: async ({ t }) => {
      const rec = await make(t);
      const deleted = (await t.admin("DELETE", api(`/items/${rec._id}`))).body;
      return { rec, deleted };
    },
    method: "POST",
    url: ({ v }) => api(`/items/${(v as V).rec._id}/restore`),
    headers: ({ v }) => ({ "if-match": tag((v as V).rec) }),
    status: 412,
    answer: PRECONDITION,
    events: [],
    after: async ({ t, v }) => expect(await read(t, (v as V).rec._id)).toEqual((v as V).deleted),
  },
  {
    name: "the admin's hard delete with a stale If-Match answers 412 and keeps the record",
    before: ({ t }) => changed(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/items/records/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-match": tag((v as V).first) }),
    status: 412,
    answer: PRECONDITION,
    events: [],
    after: async ({ t, v }) => expect(await read(t, (v as V).first._id)).toEqual((v as V).second),
  },
  {
    name: "the admin's hard delete with the current If-Match removes the record",
    before: ({ t }) => changed(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/items/records/${(v as V).first._id}`),
    headers: ({ v }) => ({ "if-match": tag((v as V).second) }),
    status: 200,
    events: ({ v }) => [`items:hard_delete:${(v as V).first._id}`],
  },
]);

describe("versions under concurrency and delta sync", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = createTestApp();
    await t.ready;
    await createCollection(t, "items", { read: "public", create: "public", update: "public", delete: "public" });
  });
  afterAll(() => t.close());

  test("of 20 concurrent PATCHes with the same If-Match exactly one wins; the others answer 412", async () => {
    const rec = await make(t, { n: 0 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => t.req("PATCH", api(`/items/${rec._id}`), { body: { n: i + 1 }, headers: { "if-match": tag(rec) } })),
    );
    const ok = answers.filter((r) => r.status === 200);
    expect(ok.length).toBe(1);
    for (const r of answers) if (r.status !== 200) expect({ status: r.status, body: r.body }).toEqual({ status: 412, body: PRECONDITION });
    expect((await read(t, rec._id)).n).toBe(ok[0]!.body.n);
  });

  test("of 10 concurrent deletes with the same If-Match exactly one wins", async () => {
    const rec = await make(t, { n: 0 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.req("DELETE", api(`/items/${rec._id}`), { headers: { "if-match": tag(rec) } })));
    expect(answers.filter((r) => r.status === 200).length).toBe(1);
    // The others lost either the precondition or the record (already deleted): never a second delete.
    for (const r of answers) expect([200, 404, 412]).toContain(r.status);
  });

  test("_updated_at:gt:T with include_deleted lists every record created, updated, deleted or restored since T", async () => {
    const a = await make(t, { n: 1 });
    const b = await make(t, { n: 1 });
    const c = await make(t, { n: 1 });
    await t.admin("DELETE", api(`/items/${c._id}`));
    const since = Math.max(a._updated_at, b._updated_at, (await read(t, c._id))._updated_at);
    t.clock.advance(10);
    const sinceNothing = await t.admin("GET", api(`/items?filter=_updated_at:gt:${since}&include_deleted=true&limit=500`));
    const before = new Set(sinceNothing.body.items.map((r: V) => r._id));
    expect(before.has(a._id) || before.has(b._id) || before.has(c._id)).toBe(false);
    await t.admin("PATCH", api(`/items/${a._id}`), { n: 2 });
    await t.admin("DELETE", api(`/items/${b._id}`));
    await t.admin("POST", api(`/items/${c._id}/restore`));
    const delta = await t.admin("GET", api(`/items?filter=_updated_at:gt:${since}&include_deleted=true&limit=500`));
    const ids = new Set(delta.body.items.map((r: V) => r._id));
    expect([a._id, b._id, c._id].every((id) => ids.has(id))).toBe(true);
  });
});
