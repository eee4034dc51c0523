import { expect } from "bun:test";
import { createCollection, type TestApp } from "../helpers/app.ts";
import { scenarios } from "../helpers/scenarios.ts";

// The change events of relations' on_delete (CONTRACT §6, §10): a cascade, soft or hard, emits one
// event per record it deletes, right after the record that caused it; set_null an update per record it
// clears; restrict refuses (409) and emits nothing; a restore brings back what its cascade took, each
// with its event; a many_via link a cascade or set_null removes (or a restore puts back) is an update
// of the record holding it.

const api = (path: string) => `/api/v1${path}`;

async function make(t: TestApp, col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", api(`/${col}`), body);
  if (res.status !== 201) throw new Error(`create in ${col} failed: ${res.status} ${res.text}`);
  return res.body._id as string;
}

async function ok(t: TestApp, method: string, path: string) {
  const res = await t.admin(method, api(path));
  if (res.status !== 200) throw new Error(`${method} ${path} failed: ${res.status} ${res.text}`);
}

async function relate(t: TestApp, from: string, to: string, type: string, on_delete?: string) {
  const [from_col, from_field] = from.split(".");
  const res = await t.admin("POST", api("/admin/relations"), { from_col, from_field, to_col: to, type, ...(on_delete ? { on_delete } : {}) });
  if (res.status !== 201) throw new Error(`relation ${from} failed: ${res.status} ${res.text}`);
}

/** An author with two books, each with one chapter (books and chapters cascade). */
async function library(t: TestApp) {
  const author = await make(t, "authors", { name: "A" });
  const b1 = await make(t, "books", { author, n: 1 });
  const c1 = await make(t, "chapters", { book: b1, n: 1 });
  const b2 = await make(t, "books", { author, n: 2 });
  const c2 = await make(t, "chapters", { book: b2, n: 2 });
  return { author, b1, c1, b2, c2 };
}

/** A person pointed at by two notes (set_null), one of them soft-deleted. */
async function personWithNotes(t: TestApp) {
  const person = await make(t, "people", { name: "P" });
  const active = await make(t, "notes", { person, n: 1 });
  const deleted = await make(t, "notes", { person, n: 2 });
  await ok(t, "DELETE", `/notes/${deleted}`);
  return { person, active, deleted };
}

/** Two tags and two articles linked to both (many_via, cascade). */
async function tagged(t: TestApp) {
  const x = await make(t, "tags", { n: 1 });
  const y = await make(t, "tags", { n: 2 });
  const a1 = await make(t, "articles", { tags: [x, y] });
  const a2 = await make(t, "articles", { tags: [y, x] });
  return { x, y, a1, a2 };
}

const RELATIONS = {
  async setup({ t }: { t: TestApp }) {
    for (const name of ["authors", "books", "chapters", "people", "notes", "owners", "pets", "tags", "articles", "labels", "items", "topics", "threads"])
      await createCollection(t, name, { read: "public", create: "public", update: "public", delete: "public" });
    await relate(t, "books.author", "authors", "one", "cascade");
    await relate(t, "chapters.book", "books", "one", "cascade");
    await relate(t, "authors.books", "books", "many");
    await relate(t, "notes.person", "people", "one", "set_null");
    await relate(t, "pets.owner", "owners", "one", "restrict");
    await relate(t, "articles.tags", "tags", "many_via", "cascade");
    await relate(t, "items.labels", "labels", "many_via", "set_null");
    await relate(t, "threads.topics", "topics", "many_via", "restrict");
  },
};

scenarios("relation writes", RELATIONS, [
  {
    name: "a create naming an existing target emits one create event carrying the relation field",
    before: ({ t }) => make(t, "authors", { name: "A" }),
    method: "POST",
    url: api("/books"),
    body: ({ v }) => ({ author: v, n: 1 }),
    status: 201,
    events: ({ v, res }) => [{ collection: "books", action: "create", id: res.body._id, record: { author: v } }],
  },
  {
    name: "a create naming no active target (422 relation) emits nothing",
    method: "POST",
    url: api("/books"),
    body: { author: "no-such-author" },
    status: 422,
    events: [],
  },
  {
    name: "a create with a many field carries it, empty, in its event",
    method: "POST",
    url: api("/authors"),
    body: { name: "B" },
    status: 201,
    events: ({ res }) => [{ collection: "authors", action: "create", id: res.body._id, record: { books: [] } }],
  },
  {
    name: "a many_via create emits one create event with the linked ids",
    before: ({ t }) => tagged(t),
    method: "POST",
    url: api("/articles"),
    body: ({ v }) => ({ tags: [v.y, v.x] }),
    status: 201,
    events: ({ v, res }) => [{ collection: "articles", action: "create", id: res.body._id, record: { tags: [v.y, v.x] } }],
  },
  {
    name: "a many_via create naming an unknown id (422) emits nothing",
    before: ({ t }) => tagged(t),
    method: "POST",
    url: api("/articles"),
    body: ({ v }) => ({ tags: [v.x, "no-such-tag"] }),
    status: 422,
    events: [],
  },
  {
    name: "changing a many_via field emits one update event of the holder only",
    before: ({ t }) => tagged(t),
    method: "PATCH",
    url: ({ v }) => api(`/articles/${v.a1}`),
    body: ({ v }) => ({ tags: [v.y] }),
    status: 200,
    events: ({ v }) => [{ collection: "articles", action: "update", id: v.a1, record: { tags: [v.y] }, previous: { tags: [v.x, v.y] } }],
  },
  {
    name: "hard-deleting a many_via holder emits only its hard_delete event",
    before: ({ t }) => tagged(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/articles/records/${v.a1}`),
    status: 200,
    events: ({ v }) => [`articles:hard_delete:${v.a1}`],
  },
]);

scenarios("on_delete cascade", RELATIONS, [
  {
    name: "a soft cascade emits the target's delete, then each pointing record's, depth first",
    before: ({ t }) => library(t),
    method: "DELETE",
    url: ({ v }) => api(`/authors/${v.author}`),
    status: 200,
    events: ({ v }) => [`authors:delete:${v.author}`, `books:delete:${v.b1}`, `chapters:delete:${v.c1}`, `books:delete:${v.b2}`, `chapters:delete:${v.c2}`],
    // The author's event carries the books it had when it was deleted; a read now lists none (they are deleted too).
    current: false,
    after: async ({ t, v }) => {
      for (const [col, id] of [["books", v.b1], ["chapters", v.c2]]) expect((await t.admin("GET", api(`/${col}/${id}`))).status).toBe(404);
    },
  },
  {
    name: "a cascade leaves records already soft-deleted alone",
    before: async ({ t }) => {
      const l = await library(t);
      await ok(t, "DELETE", `/books/${l.b1}`);
      return l;
    },
    method: "DELETE",
    url: ({ v }) => api(`/authors/${v.author}`),
    status: 200,
    events: ({ v }) => [`authors:delete:${v.author}`, `books:delete:${v.b2}`, `chapters:delete:${v.c2}`],
    current: false,
  },
  {
    name: "deleting a record in the middle of a chain cascades down only",
    before: ({ t }) => library(t),
    method: "DELETE",
    url: ({ v }) => api(`/books/${v.b2}`),
    status: 200,
    events: ({ v }) => [`books:delete:${v.b2}`, `chapters:delete:${v.c2}`],
  },
  {
    name: "restoring the target restores what its cascade soft-deleted, each with a restore event",
    before: async ({ t }) => {
      const l = await library(t);
      await ok(t, "DELETE", `/authors/${l.author}`);
      return l;
    },
    method: "POST",
    url: ({ v }) => api(`/authors/${v.author}/restore`),
    status: 200,
    events: ({ v }) => [`authors:restore:${v.author}`, `books:restore:${v.b1}`, `chapters:restore:${v.c1}`, `books:restore:${v.b2}`, `chapters:restore:${v.c2}`],
    current: false,
  },
  {
    name: "a restore does not bring back what was deleted before the cascade",
    before: async ({ t }) => {
      const l = await library(t);
      await ok(t, "DELETE", `/books/${l.b1}`);
      await ok(t, "DELETE", `/authors/${l.author}`);
      return l;
    },
    method: "POST",
    url: ({ v }) => api(`/authors/${v.author}/restore`),
    status: 200,
    events: ({ v }) => [`authors:restore:${v.author}`, `books:restore:${v.b2}`, `chapters:restore:${v.c2}`],
    current: false,
  },
  {
    name: "a hard cascade emits the target's hard_delete, then each pointing record's, soft-deleted ones included",
    before: async ({ t }) => {
      const l = await library(t);
      await ok(t, "DELETE", `/books/${l.b1}`);
      return l;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/authors/records/${v.author}`),
    status: 200,
    events: ({ v }) => [`authors:hard_delete:${v.author}`, `books:hard_delete:${v.b1}`, `chapters:hard_delete:${v.c1}`, `books:hard_delete:${v.b2}`, `chapters:hard_delete:${v.c2}`],
  },
  {
    name: "a batch deleting a target emits the cascade's events inside the operation's place",
    before: async ({ t }) => ({ ...(await library(t)), other: await make(t, "authors", { name: "O" }) }),
    method: "POST",
    url: api("/authors/batch"),
    body: ({ v }) => ({
      operations: [
        { op: "update", id: v.other, data: { name: "O2" } },
        { op: "delete", id: v.author },
        { op: "create", data: { name: "N" } },
      ],
    }),
    status: 200,
    events: ({ v, res }) => [
      `authors:update:${v.other}`,
      `authors:delete:${v.author}`,
      `books:delete:${v.b1}`,
      `chapters:delete:${v.c1}`,
      `books:delete:${v.b2}`,
      `chapters:delete:${v.c2}`,
      `authors:create:${res.body.results[2].record._id}`,
    ],
    current: false,
  },
  {
    name: "a batch whose cascade runs and then fails later emits nothing",
    before: ({ t }) => library(t),
    method: "POST",
    url: api("/authors/batch"),
    body: ({ v }) => ({ operations: [{ op: "delete", id: v.author }, { op: "update", id: "no-such-author", data: { name: "x" } }] }),
    status: 400,
    contains: { code: "batch_failed", index: 1 },
    events: [],
    after: async ({ t, v }) => expect((await t.admin("GET", api(`/chapters/${v.c1}`))).status).toBe(200),
  },
]);

scenarios("on_delete set_null and restrict", RELATIONS, [
  {
    name: "a soft delete under set_null emits the target's delete, then an update of every pointing record, soft-deleted ones included",
    before: ({ t }) => personWithNotes(t),
    method: "DELETE",
    url: ({ v }) => api(`/people/${v.person}`),
    status: 200,
    events: ({ v }) => [
      `people:delete:${v.person}`,
      { collection: "notes", action: "update", id: v.active, record: { person: null }, previous: { person: v.person } },
      { collection: "notes", action: "update", id: v.deleted, record: { person: null, _deleted_at: expect.any(Number) }, previous: { person: v.person } },
    ],
  },
  {
    name: "a hard delete under set_null emits the target's hard_delete, then the updates",
    before: ({ t }) => personWithNotes(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/people/records/${v.person}`),
    status: 200,
    events: ({ v }) => [`people:hard_delete:${v.person}`, `notes:update:${v.active}`, `notes:update:${v.deleted}`],
  },
  {
    name: "restoring a set_null target emits only its restore: the cleared fields stay null",
    before: async ({ t }) => {
      const p = await personWithNotes(t);
      await ok(t, "DELETE", `/people/${p.person}`);
      return p;
    },
    method: "POST",
    url: ({ v }) => api(`/people/${v.person}/restore`),
    status: 200,
    events: ({ v }) => [`people:restore:${v.person}`],
    after: async ({ t, v }) => expect((await t.admin("GET", api(`/notes/${v.active}`))).body.person).toBeNull(),
  },
  {
    name: "a soft delete under restrict while an active record points at it (409) emits nothing",
    before: async ({ t }) => {
      const owner = await make(t, "owners", { n: 1 });
      await make(t, "pets", { owner });
      return owner;
    },
    method: "DELETE",
    url: ({ v }) => api(`/owners/${v}`),
    status: 409,
    events: [],
    after: async ({ t, v }) => expect((await t.admin("GET", api(`/owners/${v}`))).status).toBe(200),
  },
  {
    name: "a hard delete under restrict (409) emits nothing",
    before: async ({ t }) => {
      const owner = await make(t, "owners", { n: 1 });
      await make(t, "pets", { owner });
      return owner;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/owners/records/${v}`),
    status: 409,
    events: [],
  },
  {
    name: "restrict lets a target go once what pointed at it is soft-deleted: only its own event",
    before: async ({ t }) => {
      const owner = await make(t, "owners", { n: 1 });
      await ok(t, "DELETE", `/pets/${await make(t, "pets", { owner })}`);
      return owner;
    },
    method: "DELETE",
    url: ({ v }) => api(`/owners/${v}`),
    status: 200,
    events: ({ v }) => [`owners:delete:${v}`],
  },
  {
    name: "a batch whose delete is restricted emits nothing",
    before: async ({ t }) => {
      const owner = await make(t, "owners", { n: 1 });
      await make(t, "pets", { owner });
      return owner;
    },
    method: "POST",
    url: api("/owners/batch"),
    body: ({ v }) => ({ operations: [{ op: "create", data: { n: 2 } }, { op: "delete", id: v }] }),
    status: 400,
    contains: { code: "batch_failed", index: 1 },
    events: [],
  },
]);

scenarios("many_via links", RELATIONS, [
  {
    name: "a soft delete of a linked record (cascade) emits its delete, then an update of each holder",
    before: ({ t }) => tagged(t),
    method: "DELETE",
    url: ({ v }) => api(`/tags/${v.x}`),
    status: 200,
    events: ({ v }) => [
      `tags:delete:${v.x}`,
      { collection: "articles", action: "update", id: v.a1, record: { tags: [v.y] }, previous: { tags: [v.x, v.y] } },
      { collection: "articles", action: "update", id: v.a2, record: { tags: [v.y] }, previous: { tags: [v.y, v.x] } },
    ],
  },
  {
    name: "restoring it puts the links back: its restore, then an update of each holder",
    before: async ({ t }) => {
      const g = await tagged(t);
      await ok(t, "DELETE", `/tags/${g.x}`);
      return g;
    },
    method: "POST",
    url: ({ v }) => api(`/tags/${v.x}/restore`),
    status: 200,
    events: ({ v }) => [
      `tags:restore:${v.x}`,
      { collection: "articles", action: "update", id: v.a1, record: { tags: [v.x, v.y] }, previous: { tags: [v.y] } },
      { collection: "articles", action: "update", id: v.a2, record: { tags: [v.y, v.x] }, previous: { tags: [v.y] } },
    ],
  },
  {
    name: "a hard delete of a linked record emits its hard_delete, then an update of each holder",
    before: ({ t }) => tagged(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/tags/records/${v.y}`),
    status: 200,
    events: ({ v }) => [`tags:hard_delete:${v.y}`, `articles:update:${v.a1}`, `articles:update:${v.a2}`],
  },
  {
    name: "a soft delete under set_null removes the links: its delete, then an update of each holder",
    before: async ({ t }) => {
      const l = await make(t, "labels", { n: 1 });
      const keep = await make(t, "labels", { n: 2 });
      return { l, keep, i1: await make(t, "items", { labels: [l, keep] }), i2: await make(t, "items", { labels: [l] }) };
    },
    method: "DELETE",
    url: ({ v }) => api(`/labels/${v.l}`),
    status: 200,
    events: ({ v }) => [
      `labels:delete:${v.l}`,
      { collection: "items", action: "update", id: v.i1, record: { labels: [v.keep] } },
      { collection: "items", action: "update", id: v.i2, record: { labels: [] } },
    ],
  },
  {
    name: "restoring a set_null target emits only its restore: the links stay gone",
    before: async ({ t }) => {
      const l = await make(t, "labels", { n: 1 });
      const i = await make(t, "items", { labels: [l] });
      await ok(t, "DELETE", `/labels/${l}`);
      return { l, i };
    },
    method: "POST",
    url: ({ v }) => api(`/labels/${v.l}/restore`),
    status: 200,
    events: ({ v }) => [`labels:restore:${v.l}`],
    after: async ({ t, v }) => expect((await t.admin("GET", api(`/items/${v.i}`))).body.labels).toEqual([]),
  },
  {
    name: "a delete under many_via restrict while an active holder links it (409) emits nothing",
    before: async ({ t }) => {
      const topic = await make(t, "topics", { n: 1 });
      await make(t, "threads", { topics: [topic] });
      return topic;
    },
    method: "DELETE",
    url: ({ v }) => api(`/topics/${v}`),
    status: 409,
    events: [],
  },

]);
