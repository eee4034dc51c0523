import { expect } from "bun:test";
import { createCollection, type TestApp } from "../helpers/app.ts";
import { scenarios } from "../helpers/scenarios.ts";

// Calls that change no record publish no change event (CONTRACT §10: events are changes of records):
// auth, users and settings, reads, and changes of collections, rules, indexes, full text and
// relations, even those that drop rows (a collection, a many_via relation's links) or whose user
// owns records.

const api = (path: string) => `/api/v1${path}`;

async function login(t: TestApp, email: string) {
  const res = await t.req("POST", api("/auth/login"), { body: { email, password: "password123" } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  return res.body as { access_token: string; refresh_token: string };
}

/** A fresh collection of this row's own (rows may change it as they like), holding `n` records. */
async function collection(t: TestApp, n = 2) {
  const name = `c${Math.random().toString(36).slice(2, 10)}`;
  await createCollection(t, name, { read: "public", create: "public", update: "public", delete: "public" });
  for (let i = 0; i < n; i++) expect((await t.admin("POST", api(`/${name}`), { n: i, title: `title ${i}`, slug: "same" })).status).toBe(201);
  return name;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

scenarios(
  "auth, users and settings",
  {
    users: ["ann"],
    async setup({ t, users }) {
      await createCollection(t, "posts", { read: "public", create: "authenticated", update: "owner", delete: "owner" });
      expect((await t.req("POST", api("/posts"), { token: users.ann!.token, body: { n: 1 } })).status).toBe(201);
    },
  },
  [
    {
      name: "register emits nothing",
      as: "anonymous",
      method: "POST",
      url: api("/auth/register"),
      body: () => ({ email: `new-${Math.random().toString(36).slice(2)}@example.com`, password: "password123" }),
      status: 201,
      events: [],
    },
    {
      name: "login emits nothing",
      as: "anonymous",
      method: "POST",
      url: api("/auth/login"),
      body: { email: "ann@example.com", password: "password123" },
      status: 200,
      events: [],
    },
    {
      name: "a failed login emits nothing",
      as: "anonymous",
      method: "POST",
      url: api("/auth/login"),
      body: { email: "ann@example.com", password: "wrong password" },
      status: 401,
      events: [],
    },
    {
      name: "refresh emits nothing",
      as: "anonymous",
      before: ({ t }) => login(t, "ann@example.com"),
      method: "POST",
      url: api("/auth/refresh"),
      body: ({ v }) => ({ refresh_token: v.refresh_token }),
      status: 200,
      events: [],
    },
    {
      name: "logout emits nothing",
      as: "anonymous",
      before: ({ t }) => login(t, "ann@example.com"),
      method: "POST",
      url: api("/auth/logout"),
      headers: ({ v }) => bearer(v.access_token),
      status: 200,
      events: [],
    },
    {
      name: "changing one's metadata emits nothing",
      as: "ann",
      method: "PATCH",
      url: api("/auth/me"),
      body: { metadata: { theme: "dark" } },
      status: 200,
      events: [],
    },
    {
      name: "creating an API key emits nothing",
      as: "ann",
      method: "POST",
      url: api("/auth/api-keys"),
      body: { name: "ci" },
      status: 201,
      events: [],
    },
    {
      name: "forgot-password emits nothing",
      as: "anonymous",
      method: "POST",
      url: api("/auth/forgot-password"),
      body: { email: "ann@example.com" },
      status: 200,
      events: [],
    },
    {
      name: "an admin creating a user emits nothing",
      method: "POST",
      url: api("/admin/users"),
      body: () => ({ email: `made-${Math.random().toString(36).slice(2)}@example.com`, password: "password123", roles: ["editor"] }),
      status: 201,
      events: [],
    },
    {
      name: "deleting a user who owns records emits nothing: the records keep their owner",
      before: async ({ t }) => {
        const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
        const res = await t.req("POST", api("/auth/register"), { body: { email, password: "password123" } });
        expect((await t.req("POST", api("/posts"), { token: res.body.access_token, body: { n: 2 } })).status).toBe(201);
        return res.body.user.id as string;
      },
      method: "DELETE",
      url: ({ v }) => api(`/admin/users/${v}`),
      status: 200,
      events: [],
      after: async ({ t, v }) => expect((await t.admin("GET", api(`/posts?filter=_owner_id:eq:${v}`))).body.total).toBe(1),
    },
    {
      name: "changing settings emits nothing",
      method: "PATCH",
      url: api("/admin/settings"),
      body: { app_name: "events" },
      status: 200,
      events: [],
    },
  ],
);

scenarios("reads and collection changes", {}, [
  ...["?filter=n:gte:0", "/count", "/aggregate?fn=sum&field=n", "?search=title"].map((query) => ({
    name: `a read (${query}) emits nothing`,
    before: async ({ t }: { t: TestApp }) => {
      const name = await collection(t);
      expect((await t.admin("POST", api(`/admin/collections/${name}/fts`))).status).toBe(201);
      return name;
    },
    method: "GET",
    url: ({ v }: { v: string }) => api(`/${v}${query}`),
    status: 200,
    events: [],
  })),
  {
    name: "reading one record emits nothing",
    before: async ({ t }) => {
      const name = await collection(t);
      return { name, id: (await t.admin("GET", api(`/${name}`))).body.items[0]._id as string };
    },
    method: "GET",
    url: ({ v }) => api(`/${v.name}/${v.id}`),
    status: 200,
    events: [],
  },
  {
    name: "creating a collection emits nothing",
    method: "POST",
    url: api("/admin/collections"),
    body: () => ({ name: `c${Math.random().toString(36).slice(2, 10)}`, rules: { read: "public" } }),
    status: 201,
    events: [],
  },
  {
    name: "changing a collection's rules (public to owner) emits nothing",
    before: ({ t }) => collection(t),
    method: "PUT",
    url: ({ v }) => api(`/admin/collections/${v}/rules`),
    body: { rules: { read: "owner", update: "owner" } },
    status: 200,
    events: [],
  },
  {
    name: "changing a collection's field rules emits nothing",
    before: ({ t }) => collection(t),
    method: "PATCH",
    url: ({ v }) => api(`/admin/collections/${v}`),
    body: { field_rules: [{ field: "title", required: true, max: 50 }] },
    status: 200,
    events: [],
  },
  {
    name: "adding an index emits nothing",
    before: ({ t }) => collection(t),
    method: "POST",
    url: ({ v }) => api(`/admin/collections/${v}/indexes`),
    body: { fields: ["n", "title"] },
    status: 201,
    events: [],
  },
  {
    name: "a unique index the records break (409) emits nothing",
    before: ({ t }) => collection(t),
    method: "POST",
    url: ({ v }) => api(`/admin/collections/${v}/indexes`),
    body: { fields: ["slug"], unique: true },
    status: 409,
    events: [],
  },
  {
    name: "dropping an index emits nothing",
    before: async ({ t }) => {
      const name = await collection(t);
      const made = await t.admin("POST", api(`/admin/collections/${name}/indexes`), { fields: ["n"] });
      expect(made.status).toBe(201);
      return { name, index: made.body.name as string };
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/${v.name}/indexes/${v.index}`),
    status: 200,
    events: [],
  },
  {
    name: "enabling full-text search over existing records emits nothing",
    before: ({ t }) => collection(t),
    method: "POST",
    url: ({ v }) => api(`/admin/collections/${v}/fts`),
    status: 201,
    events: [],
  },
  {
    name: "disabling full-text search emits nothing",
    before: async ({ t }) => {
      const name = await collection(t);
      expect((await t.admin("POST", api(`/admin/collections/${name}/fts`))).status).toBe(201);
      return name;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/${v}/fts`),
    status: 200,
    events: [],
  },
  {
    name: "creating a relation over existing records emits nothing",
    before: async ({ t }) => ({ from: await collection(t), to: await collection(t) }),
    method: "POST",
    url: api("/admin/relations"),
    body: ({ v }) => ({ from_col: v.from, from_field: "link", to_col: v.to, type: "many_via", on_delete: "cascade" }),
    status: 201,
    events: [],
  },
  {
    name: "deleting a many_via relation drops its links and emits nothing",
    before: async ({ t }) => {
      const from = await collection(t, 0);
      const to = await collection(t, 1);
      const rel = await t.admin("POST", api("/admin/relations"), { from_col: from, from_field: "link", to_col: to, type: "many_via", on_delete: "cascade" });
      expect(rel.status).toBe(201);
      const target = (await t.admin("GET", api(`/${to}`))).body.items[0]._id;
      expect((await t.admin("POST", api(`/${from}`), { link: [target] })).status).toBe(201);
      return rel.body.id as string;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/relations/${v}`),
    status: 200,
    events: [],
  },
  {
    name: "deleting a collection with records emits nothing",
    before: ({ t }) => collection(t),
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/${v}`),
    status: 200,
    answer: { ok: true },
    events: [],
  },
  {
    name: "deleting a collection other records point at (cascade) emits nothing",
    before: async ({ t }) => {
      const from = await collection(t, 0);
      const to = await collection(t, 1);
      expect((await t.admin("POST", api("/admin/relations"), { from_col: from, from_field: "link", to_col: to, type: "one", on_delete: "cascade" })).status).toBe(201);
      const target = (await t.admin("GET", api(`/${to}`))).body.items[0]._id;
      expect((await t.admin("POST", api(`/${from}`), { link: target })).status).toBe(201);
      return to;
    },
    method: "DELETE",
    url: ({ v }) => api(`/admin/collections/${v}`),
    status: 200,
    events: [],
  },
]);
