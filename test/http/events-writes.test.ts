import { expect } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { createCollection } from "../helpers/app.ts";
import { scenarios, type TableState } from "../helpers/scenarios.ts";

// The change events of every single, bulk and batch write of the data API, and of its refusals
// (CONTRACT §4, §10), on a collection without hooks or relations: the store's shortest paths.
// Each row lists every event its call commits, in order; `[]` means none at all.

const api = (path: string) => `/api/v1${path}`;

async function make(t: TestApp, col: string, body: Record<string, unknown>, token?: string) {
  const res = token ? await t.req("POST", api(`/${col}`), { token, body }) : await t.admin("POST", api(`/${col}`), body);
  if (res.status !== 201) throw new Error(`create in ${col} failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any>;
}

async function softDeleted(t: TestApp, col: string, body: Record<string, unknown>) {
  const rec = await make(t, col, body);
  const res = await t.admin("DELETE", api(`/${col}/${rec._id}`));
  if (res.status !== 200) throw new Error(`delete failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any>;
}

async function adminRead(t: TestApp, col: string, id: string) {
  return (await t.admin("GET", api(`/${col}/${id}?include_deleted=true`))).body;
}

async function setup({ t }: Omit<TableState<undefined>, "s">) {
  // posts: users write their own; title has field rules; slug is unique.
  await createCollection(t, "posts", { read: "public", create: "authenticated", update: "owner", delete: "owner" }, { field_rules: [{ field: "title", max: 20 }] });
  await make(t, "posts", { slug: "taken", n: 0, title: "first" });
  expect((await t.admin("POST", api("/admin/collections/posts/indexes"), { fields: ["slug"], unique: true })).status).toBe(201);
  await createCollection(t, "open", { read: "public", create: "public", update: "public", delete: "public" });
  await createCollection(t, "closed", { read: "public", create: "disabled", update: "disabled", delete: "disabled" });
  await createCollection(t, "hidden", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
  return undefined;
}

const NOT_FOUND = { error: "record not found", code: "not_found" };

scenarios("single writes", { users: ["ann", "bob"], setup }, [
  {
    name: "a user's create emits one create event carrying the record",
    as: "ann",
    method: "POST",
    url: api("/posts"),
    body: { title: "hello", n: 1 },
    status: 201,
    contains: { title: "hello", n: 1 },
    events: ({ res, users }) => [{ collection: "posts", action: "create", id: res.body._id, record: { ...res.body, _owner_id: users.ann!.id } }],
  },
  {
    name: "an anonymous create where the rule allows it emits a create event by nobody",
    as: "anonymous",
    method: "POST",
    url: api("/open"),
    body: { n: 1 },
    status: 201,
    events: ({ res }) => [{ collection: "open", action: "create", id: res.body._id, by: null }],
  },
  {
    name: "a create that adds a field emits only the create event",
    method: "POST",
    url: api("/open"),
    body: () => ({ [`f${Math.random().toString(36).slice(2, 8)}`]: "new field" }),
    status: 201,
    events: ({ res }) => [`open:create:${res.body._id}`],
  },
  {
    name: "a create failing a field rule (422) emits nothing",
    method: "POST",
    url: api("/posts"),
    body: { title: "a title far longer than twenty characters" },
    status: 422,
    events: [],
  },
  {
    name: "a create of a value of another type (422) emits nothing",
    method: "POST",
    url: api("/posts"),
    body: { n: "not a number" },
    status: 422,
    events: [],
  },
  {
    name: "a create breaking a unique index (409) emits nothing",
    method: "POST",
    url: api("/posts"),
    body: { slug: "taken" },
    status: 409,
    contains: { code: "unique_violation" },
    events: [],
  },
  {
    name: "an anonymous create the rule refuses (401) emits nothing",
    as: "anonymous",
    method: "POST",
    url: api("/posts"),
    body: { n: 1 },
    status: 401,
    events: [],
  },
  {
    name: "a create on a disabled rule (403) emits nothing",
    as: "ann",
    method: "POST",
    url: api("/closed"),
    body: { n: 1 },
    status: 403,
    events: [],
  },
  {
    name: "a create in an unknown collection (404) emits nothing",
    method: "POST",
    url: api("/nowhere"),
    body: { n: 1 },
    status: 404,
    events: [],
  },
  {
    name: "an owner's update emits one update event with the record before and after",
    as: "ann",
    before: ({ t, users }) => make(t, "posts", { title: "old", n: 1 }, users.ann!.token),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v._id}`),
    body: { title: "new" },
    status: 200,
    contains: { title: "new", n: 1 },
    events: ({ v }) => [{ collection: "posts", action: "update", id: v._id, record: { title: "new", n: 1 }, previous: v }],
  },
  {
    name: "an update that changes nothing still emits one update event",
    before: ({ t }) => make(t, "open", { n: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/open/${v._id}`),
    body: { n: 1 },
    status: 200,
    events: ({ v }) => [`open:update:${v._id}`],
  },
  {
    name: "another user's update of an owner-rule record (403) emits nothing",
    as: "bob",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v._id}`),
    body: { n: 2 },
    status: 403,
    events: [],
  },
  {
    name: "an update of a record the reader may not see (404) emits nothing",
    as: "bob",
    before: ({ t, users }) => make(t, "hidden", { n: 1 }, users.ann!.token),
    method: "PATCH",
    url: ({ v }) => api(`/hidden/${v._id}`),
    body: { n: 2 },
    status: 404,
    answer: NOT_FOUND,
    events: [],
  },
  {
    name: "an update failing a field rule (422) emits nothing",
    before: ({ t }) => make(t, "posts", { title: "short" }),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v._id}`),
    body: { title: "a title far longer than twenty characters" },
    status: 422,
    events: [],
  },
  {
    name: "an update breaking a unique index (409) emits nothing",
    before: ({ t }) => make(t, "posts", { slug: `s${Math.random()}` }),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v._id}`),
    body: { slug: "taken" },
    status: 409,
    events: [],
  },
  {
    name: "an update of a soft-deleted record (404) emits nothing",
    before: ({ t }) => softDeleted(t, "open", { n: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/open/${v._id}`),
    body: { n: 2 },
    status: 404,
    answer: NOT_FOUND,
    events: [],
  },
  {
    name: "an owner's soft delete emits one delete event carrying the soft-deleted record",
    as: "ann",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "DELETE",
    url: ({ v }) => api(`/posts/${v._id}`),
    status: 200,
    events: ({ v, res }) => [
      { collection: "posts", action: "delete", id: v._id, record: { ...v, _updated_at: res.body._updated_at, _deleted_at: res.body._deleted_at }, previous: v },
    ],
  },
  {
    name: "another user's delete (403) emits nothing",
    as: "bob",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "DELETE",
    url: ({ v }) => api(`/posts/${v._id}`),
    status: 403,
    events: [],
  },
  {
    name: "deleting an already deleted record (404) emits nothing",
    before: ({ t }) => softDeleted(t, "open", { n: 1 }),
    method: "DELETE",
    url: ({ v }) => api(`/open/${v._id}`),
    status: 404,
    events: [],
  },
  {
    name: "restoring a soft-deleted record emits one restore event",
    as: "ann",
    before: async ({ t, users }) => {
      const rec = await make(t, "posts", { n: 1 }, users.ann!.token);
      expect((await t.req("DELETE", api(`/posts/${rec._id}`), { token: users.ann!.token })).status).toBe(200);
      return adminRead(t, "posts", rec._id);
    },
    method: "POST",
    url: ({ v }) => api(`/posts/${v._id}/restore`),
    status: 200,
    contains: { _deleted_at: null },
    events: ({ v, res }) => [
      { collection: "posts", action: "restore", id: v._id, record: { _deleted_at: null, _updated_at: res.body._updated_at }, previous: { _deleted_at: v._deleted_at, _updated_at: v._updated_at } },
    ],
    // The restore moves the version, even within the millisecond of the delete.
    after: ({ v, res }) => expect(res.body._updated_at).toBeGreaterThan(v._updated_at),
  },
  {
    // CONTRACT §4: restoring an active record is a no-op 200; nothing changed, so nothing is published.
    name: "restoring an active record is a no-op and emits nothing",
    before: ({ t }) => make(t, "open", { n: 1 }),
    method: "POST",
    url: ({ v }) => api(`/open/${v._id}/restore`),
    status: 200,
    answer: ({ v }) => v,
    events: [],
  },
  {
    name: "a restore the delete rule refuses (403) emits nothing",
    as: "bob",
    before: async ({ t, users }) => {
      const rec = await make(t, "posts", { n: 1 }, users.ann!.token);
      expect((await t.req("DELETE", api(`/posts/${rec._id}`), { token: users.ann!.token })).status).toBe(200);
      return rec;
    },
    method: "POST",
    url: ({ v }) => api(`/posts/${v._id}/restore`),
    status: 403,
    events: [],
  },
  {
    name: "an admin's hard delete of an active record emits one hard_delete event carrying its last state",
    before: ({ t }) => make(t, "posts", { n: 1 }),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/posts/records/${v._id}`),
    status: 200,
    answer: ({ v }) => ({ ok: true, id: v._id }),
    events: ({ v }) => [{ collection: "posts", action: "hard_delete", id: v._id, record: v, previous: v }],
  },
  {
    name: "an admin's hard delete of a soft-deleted record emits one hard_delete event",
    before: ({ t }) => softDeleted(t, "open", { n: 1 }),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/open/records/${v._id}`),
    status: 200,
    events: ({ v }) => [{ collection: "open", action: "hard_delete", id: v._id, record: { _deleted_at: v._deleted_at } }],
  },
  {
    name: "a hard delete of an unknown record (404) emits nothing",
    method: "DELETE",
    url: api("/admin/collections/open/records/no-such-record"),
    status: 404,
    events: [],
  },
  {
    name: "a user cannot hard delete (403, admin only) and nothing is emitted",
    as: "ann",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/posts/records/${v._id}`),
    status: 403,
    answer: { error: "admin credentials required", code: "forbidden" },
    events: [],
  },
]);

const bulkIds = (res: { body: any }) => (res.body as { _id: string }[]).map((r) => r._id);

scenarios("bulk inserts", { users: ["ann"], setup }, [
  {
    name: "a bulk insert emits one create event per record, in order",
    as: "ann",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ n: 1 }, { n: 2 }, { n: 3 }],
    status: 201,
    events: ({ res }) => bulkIds(res).map((id, i) => ({ collection: "posts", action: "create", id, record: { n: i + 1 } })),
  },
  {
    name: "a bulk insert whose records bring new fields emits one create event per record",
    method: "POST",
    url: api("/open/bulk"),
    body: () => {
      const f = `g${Math.random().toString(36).slice(2, 8)}`;
      return [{ n: 1 }, { [f]: "x" }, { [`${f}b`]: true, n: 3 }];
    },
    status: 201,
    events: ({ res }) => bulkIds(res).map((id) => `open:create:${id}`),
  },
  {
    name: "a bulk insert of 500 records emits 500 create events in order",
    method: "POST",
    url: api("/open/bulk"),
    body: Array.from({ length: 500 }, (_, i) => ({ i })),
    status: 201,
    events: ({ res }) => bulkIds(res).map((id, i) => ({ collection: "open", action: "create", id, record: { i } })),
    // One read per record would make the row slow; the first rows check the records themselves.
    current: false,
  },
  {
    name: "a bulk insert with a record failing a field rule (422) emits nothing",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ title: "ok" }, { title: "ok too" }, { title: "a title far longer than twenty characters" }],
    status: 422,
    contains: { index: 2 },
    events: [],
  },
  {
    name: "a bulk insert with a value of another type (422) emits nothing",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ n: 1 }, { n: "two" }],
    status: 422,
    contains: { index: 1 },
    events: [],
  },
  {
    name: "a bulk insert breaking a unique index (409) emits nothing",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ slug: `b${Math.random()}` }, { slug: "taken" }],
    status: 409,
    events: [],
  },
  {
    name: "a bulk insert with a record that is not an object (400) emits nothing",
    method: "POST",
    url: api("/open/bulk"),
    body: [{ n: 1 }, 2],
    status: 400,
    events: [],
  },
  {
    name: "a bulk insert of 501 records (400) emits nothing",
    method: "POST",
    url: api("/open/bulk"),
    body: Array.from({ length: 501 }, (_, i) => ({ i })),
    status: 400,
    events: [],
  },
  {
    name: "a bulk insert the create rule refuses (403) emits nothing",
    as: "ann",
    method: "POST",
    url: api("/closed/bulk"),
    body: [{ n: 1 }],
    status: 403,
    events: [],
  },
]);

scenarios("batches", { users: ["ann", "bob"], setup }, [
  {
    name: "a batch emits the events of its operations, in their order",
    before: async ({ t }) => ({ a: await make(t, "open", { n: 1 }), b: await make(t, "open", { n: 2 }) }),
    method: "POST",
    url: api("/open/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "update", id: v.b._id, data: { n: 20 } },
        { op: "create", data: { n: 3 } },
        { op: "delete", id: v.a._id },
        { op: "create", data: { n: 4 } },
      ],
    }),
    status: 200,
    events: ({ v, res }) => [
      { collection: "open", action: "update", id: v.b._id, record: { n: 20 }, previous: { n: 2 } },
      { collection: "open", action: "create", id: res.body.results[1].record._id, record: { n: 3 } },
      { collection: "open", action: "delete", id: v.a._id },
      { collection: "open", action: "create", id: res.body.results[3].record._id, record: { n: 4 } },
    ],
  },
  {
    name: "a batch that updates one record twice emits two update events, each with its own state",
    before: ({ t }) => make(t, "open", { n: 1 }),
    method: "POST",
    url: api("/open/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "update", id: v._id, data: { n: 2 } },
        { op: "update", id: v._id, data: { n: 3 } },
        { op: "delete", id: v._id },
      ],
    }),
    status: 200,
    events: ({ v }) => [
      { collection: "open", action: "update", id: v._id, record: { n: 2 }, previous: { n: 1 } },
      { collection: "open", action: "update", id: v._id, record: { n: 3 }, previous: { n: 2 } },
      { collection: "open", action: "delete", id: v._id, previous: { n: 3 } },
    ],
  },
  {
    name: "a user's batch emits events by that user",
    as: "ann",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "POST",
    url: api("/posts/batch"),
    body: ({ v }) => ({ operations: [{ op: "create", data: { n: 2 } }, { op: "update", id: v._id, data: { n: 3 } }] }),
    status: 200,
    events: ({ v, res }) => [`posts:create:${res.body.results[0].record._id}`, `posts:update:${v._id}`],
  },
  {
    name: "a batch failing at its last operation (record not found) emits nothing",
    before: ({ t }) => make(t, "open", { n: 1 }),
    method: "POST",
    url: api("/open/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "create", data: { n: 2 } },
        { op: "update", id: v._id, data: { n: 3 } },
        { op: "delete", id: v._id },
        { op: "update", id: "no-such-record", data: { n: 4 } },
      ],
    }),
    status: 400,
    answer: { error: "operation 3 (update): record not found", code: "batch_failed", index: 3, op: "update" },
    events: [],
    after: async ({ t, v }) => expect(await adminRead(t, "open", v._id)).toEqual(v),
  },
  {
    name: "a batch with an operation failing a field rule emits nothing",
    method: "POST",
    url: api("/posts/batch"),
    body: { operations: [{ op: "create", data: { title: "ok" } }, { op: "create", data: { title: "a title far longer than twenty characters" } }] },
    status: 400,
    contains: { code: "batch_failed", index: 1 },
    events: [],
  },
  {
    name: "a batch with an operation breaking a unique index emits nothing",
    method: "POST",
    url: api("/posts/batch"),
    body: { operations: [{ op: "create", data: { n: 1 } }, { op: "create", data: { slug: "taken" } }] },
    status: 400,
    contains: { code: "batch_failed", index: 1 },
    events: [],
  },
  {
    name: "a batch with an operation the rule refuses emits nothing",
    as: "bob",
    before: ({ t, users }) => make(t, "posts", { n: 1 }, users.ann!.token),
    method: "POST",
    url: api("/posts/batch"),
    body: ({ v }) => ({ operations: [{ op: "create", data: { n: 2 } }, { op: "delete", id: v._id }] }),
    status: 400,
    contains: { code: "batch_failed", index: 1, op: "delete" },
    events: [],
  },
  {
    name: "a malformed batch (400) emits nothing",
    method: "POST",
    url: api("/open/batch"),
    body: { operations: [{ op: "create", data: { n: 1 } }, { op: "upsert", data: {} }] },
    status: 400,
    events: [],
  },
]);
