import { expect } from "bun:test";
import type { HookEvent, HookModule, HookName } from "../../src/hooks/types.ts";
import { HOOK_NAMES } from "../../src/hooks/types.ts";
import { createCollection, type TestApp } from "../helpers/app.ts";
import { scenarios } from "../helpers/scenarios.ts";

// With hooks loaded every write takes the store's general path. A hook that throws rolls its
// operation back (CONTRACT §5): whatever was staged before the throw, its own record's event
// included (an after* hook runs once the event is staged), and every record a cascade or a bulk or a
// batch had already changed, none of it is published.

const api = (path: string) => `/api/v1${path}`;

/**
 * Throws in the hook a record names in its `refuse` field (in the data written, or the record as
 * stored), so each row picks the hook that refuses; `stamp` in a create's data adds `stamped: true`.
 */
function refusingHooks(): HookModule {
  const module: HookModule = { collection: "*" };
  for (const name of HOOK_NAMES) {
    module[name] = (e: HookEvent) => {
      if (e.data?.refuse === name || e.record?.refuse === name) throw new Error(`${name} refused`);
      if (name === "beforeCreate" && e.data?.stamp) e.data.stamped = true;
    };
  }
  return module;
}

async function make(t: TestApp, col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", api(`/${col}`), body);
  if (res.status !== 201) throw new Error(`create in ${col} failed: ${res.status} ${res.text}`);
  return res.body._id as string;
}

async function deleted(t: TestApp, col: string, body: Record<string, unknown>) {
  const id = await make(t, col, body);
  expect((await t.admin("DELETE", api(`/${col}/${id}`))).status).toBe(200);
  return id;
}

const refused = (hook: HookName) => ({ error: `${hook} refused`, code: "hook_rejected" });

const HOOKED = {
  app: { context: { hooks: { list: [refusingHooks()] } } },
  async setup({ t }: { t: TestApp }) {
    for (const name of ["posts", "authors", "books", "people", "notes", "tags", "articles"])
      await createCollection(t, name, { read: "public", create: "public", update: "public", delete: "public" });
    const rel = (body: Record<string, unknown>) => t.admin("POST", api("/admin/relations"), body);
    expect((await rel({ from_col: "books", from_field: "author", to_col: "authors", type: "one", on_delete: "cascade" })).status).toBe(201);
    expect((await rel({ from_col: "notes", from_field: "person", to_col: "people", type: "one", on_delete: "set_null" })).status).toBe(201);
    expect((await rel({ from_col: "articles", from_field: "tags", to_col: "tags", type: "many_via", on_delete: "cascade" })).status).toBe(201);
  },
};

scenarios("writes with hooks", HOOKED, [
  {
    name: "a create emits one create event carrying what the beforeCreate hook set",
    method: "POST",
    url: api("/posts"),
    body: { n: 1, stamp: true },
    status: 201,
    contains: { stamped: true },
    events: ({ res }) => [{ collection: "posts", action: "create", id: res.body._id, record: { n: 1, stamp: true, stamped: true } }],
  },
  {
    name: "a create refused by beforeCreate emits nothing",
    method: "POST",
    url: api("/posts"),
    body: { refuse: "beforeCreate" },
    status: 400,
    answer: refused("beforeCreate"),
    events: [],
  },
  {
    name: "a create refused by afterCreate (its event already staged) emits nothing",
    method: "POST",
    url: api("/posts"),
    body: { refuse: "afterCreate" },
    status: 400,
    answer: refused("afterCreate"),
    events: [],
  },
  {
    name: "a bulk insert with hooks emits one create event per record, in order",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ n: 1 }, { n: 2, stamp: true }, { n: 3 }],
    status: 201,
    events: ({ res }) => (res.body as { _id: string }[]).map((r, i) => ({ collection: "posts", action: "create", id: r._id, record: { n: i + 1 } })),
  },
  {
    name: "a bulk insert whose third record afterCreate refuses emits nothing",
    method: "POST",
    url: api("/posts/bulk"),
    body: [{ n: 1 }, { n: 2 }, { n: 3, refuse: "afterCreate" }, { n: 4 }],
    status: 400,
    answer: { ...refused("afterCreate"), index: 2 },
    events: [],
  },
  {
    name: "a batch whose second operation a hook refuses emits nothing",
    before: ({ t }) => make(t, "posts", { n: 1 }),
    method: "POST",
    url: api("/posts/batch"),
    body: ({ v }) => ({ operations: [{ op: "update", id: v, data: { n: 2 } }, { op: "create", data: { refuse: "afterCreate" } }] }),
    status: 400,
    answer: { error: "operation 1 (create): afterCreate refused", code: "batch_failed", index: 1, op: "create" },
    events: [],
  },
  {
    name: "an update refused by beforeUpdate emits nothing",
    before: ({ t }) => make(t, "posts", { n: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v}`),
    body: { refuse: "beforeUpdate" },
    status: 400,
    answer: refused("beforeUpdate"),
    events: [],
  },
  {
    name: "an update refused by afterUpdate emits nothing",
    before: ({ t }) => make(t, "posts", { n: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v}`),
    body: { refuse: "afterUpdate" },
    status: 400,
    answer: refused("afterUpdate"),
    events: [],
  },
  {
    name: "an update with hooks emits one update event",
    before: ({ t }) => make(t, "posts", { n: 1 }),
    method: "PATCH",
    url: ({ v }) => api(`/posts/${v}`),
    body: { n: 2 },
    status: 200,
    events: ({ v }) => [`posts:update:${v}`],
  },
  {
    name: "a soft delete refused by beforeDelete emits nothing",
    before: ({ t }) => make(t, "posts", { refuse: "beforeDelete" }),
    method: "DELETE",
    url: ({ v }) => api(`/posts/${v}`),
    status: 400,
    answer: refused("beforeDelete"),
    events: [],
  },
  {
    name: "a soft delete refused by afterDelete emits nothing",
    before: ({ t }) => make(t, "posts", { refuse: "afterDelete" }),
    method: "DELETE",
    url: ({ v }) => api(`/posts/${v}`),
    status: 400,
    answer: refused("afterDelete"),
    events: [],
  },
  {
    name: "a hard delete refused by beforeDelete emits nothing",
    before: ({ t }) => make(t, "posts", { refuse: "beforeDelete" }),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/posts/records/${v}`),
    status: 400,
    answer: refused("beforeDelete"),
    events: [],
  },
  {
    name: "a restore refused by beforeRestore emits nothing",
    before: ({ t }) => deleted(t, "posts", { refuse: "beforeRestore" }),
    method: "POST",
    url: ({ v }) => api(`/posts/${v}/restore`),
    status: 400,
    answer: refused("beforeRestore"),
    events: [],
  },
  {
    name: "a restore refused by afterRestore emits nothing",
    before: ({ t }) => deleted(t, "posts", { refuse: "afterRestore" }),
    method: "POST",
    url: ({ v }) => api(`/posts/${v}/restore`),
    status: 400,
    answer: refused("afterRestore"),
    events: [],
  },
  {
    name: "a restore with hooks emits one restore event",
    before: ({ t }) => deleted(t, "posts", { n: 1 }),
    method: "POST",
    url: ({ v }) => api(`/posts/${v}/restore`),
    status: 200,
    events: ({ v }) => [`posts:restore:${v}`],
  },
]);

scenarios("relations with hooks", HOOKED, [
  {
    name: "a cascade emits the target's delete and each book's",
    before: async ({ t }) => {
      const author = await make(t, "authors", { n: 1 });
      return { author, b1: await make(t, "books", { author }), b2: await make(t, "books", { author }) };
    },
    method: "DELETE",
    url: ({ v }) => api(`/authors/${v.author}`),
    status: 200,
    events: ({ v }) => [`authors:delete:${v.author}`, `books:delete:${v.b1}`, `books:delete:${v.b2}`],
  },
  {
    name: "a cascade whose last book's afterDelete refuses emits nothing, though the target and the first book were staged",
    before: async ({ t }) => {
      const author = await make(t, "authors", { n: 1 });
      await make(t, "books", { author });
      await make(t, "books", { author, refuse: "afterDelete" });
      return author;
    },
    method: "DELETE",
    url: ({ v }) => api(`/authors/${v}`),
    status: 400,
    answer: refused("afterDelete"),
    events: [],
  },
  {
    name: "a hard cascade a book's beforeDelete refuses emits nothing",
    before: async ({ t }) => {
      const author = await make(t, "authors", { n: 1 });
      await make(t, "books", { author, refuse: "beforeDelete" });
      return author;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/authors/records/${v}`),
    status: 400,
    answer: refused("beforeDelete"),
    events: [],
  },
  {
    name: "a restore whose cascade a book's beforeRestore refuses emits nothing",
    before: async ({ t }) => {
      const author = await make(t, "authors", { n: 1 });
      await make(t, "books", { author, refuse: "beforeRestore" });
      expect((await t.admin("DELETE", api(`/authors/${author}`))).status).toBe(200);
      return author;
    },
    method: "POST",
    url: ({ v }) => api(`/authors/${v}/restore`),
    status: 400,
    answer: refused("beforeRestore"),
    events: [],
  },
  {
    name: "a set_null a note's beforeUpdate refuses emits nothing",
    before: async ({ t }) => {
      const person = await make(t, "people", { n: 1 });
      await make(t, "notes", { person });
      await make(t, "notes", { person, refuse: "beforeUpdate" });
      return person;
    },
    method: "DELETE",
    url: ({ v }) => api(`/people/${v}`),
    status: 400,
    answer: refused("beforeUpdate"),
    events: [],
  },
  {
    name: "a many_via unlink a holder's afterUpdate refuses emits nothing",
    before: async ({ t }) => {
      const tag = await make(t, "tags", { n: 1 });
      await make(t, "articles", { tags: [tag] });
      await make(t, "articles", { tags: [tag], refuse: "afterUpdate" });
      return tag;
    },
    method: "DELETE",
    url: ({ v }) => api(`/tags/${v}`),
    status: 400,
    answer: refused("afterUpdate"),
    events: [],
  },
  {
    name: "a many_via relink on restore a holder's beforeUpdate refuses emits nothing",
    before: async ({ t }) => {
      const tag = await make(t, "tags", { n: 1 });
      await make(t, "articles", { tags: [tag] });
      const guarded = await make(t, "articles", { tags: [tag], refuse: "none yet" });
      expect((await t.admin("DELETE", api(`/tags/${tag}`))).status).toBe(200);
      // Refused from now on (written past the hooks, which would refuse it): the unlink went through, the relink will not.
      await t.db.run(`UPDATE "articles" SET "refuse" = ? WHERE "_id" = ?`, ["beforeUpdate", guarded]);
      return tag;
    },
    method: "POST",
    url: ({ v }) => api(`/tags/${v}/restore`),
    status: 400,
    answer: refused("beforeUpdate"),
    events: [],
  },
]);
