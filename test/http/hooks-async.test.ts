import { afterAll, expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { createCollection, type TestApp } from "../helpers/app.ts";
import { scenarios, type TableState } from "../helpers/scenarios.ts";

// Async hooks with `tx` (CONTRACT §15): a hook may await, reads and writes through the write path inside the
// request's transaction, may set `_owner_id`, nests up to 3 deep; a failure anywhere rolls the request back.

const dir = mkdtempSync(join(tmpdir(), "baas-hooks-async-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

writeFileSync(
  join(dir, "shop.ts"),
  `
export default [
  {
    collection: "orders",
    async beforeCreate({ data, tx }) {
      const product = await tx.get("products", data.product);
      if (!product) throw { status: 404, message: "no such product" };
      data.total = product.price * data.qty;
      // The stock's field rule (min 0) refuses an order larger than the stock: the whole request rolls back.
      await tx.update("products", product._id, { "stock-": data.qty });
      if (typeof data.for_user === "string") data._owner_id = data.for_user;
    },
    async afterCreate({ record, tx }) {
      await tx.create("audit", { order: record._id });
      if (record.note === "fail after") throw { status: 409, message: "refused after the writes" };
    },
  },
  {
    collection: "n1",
    async afterCreate({ record, tx }) { await tx.create("n2", { from: record._id, deep: record.deep }); },
  },
  {
    collection: "n2",
    async afterCreate({ record, tx }) { await tx.create("n3", { from: record._id, deep: record.deep }); },
  },
  {
    collection: "n3",
    async afterCreate({ record, tx }) {
      if (record.deep) await tx.create("n4", { from: record._id });
      else await tx.list("n1", { limit: 1 });
    },
  },
  {
    collection: "n4",
    async afterCreate({ tx }) { await tx.list("n1", { limit: 1 }); },
  },
];
`,
);

const hooks = await loadHooks(dir);
const api = (path: string) => `/api/v1${path}`;
type V = Record<string, any>;

async function make(t: TestApp, col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", api(`/${col}`), body);
  if (res.status !== 201) throw new Error(`create in ${col} failed: ${res.status} ${res.text}`);
  return res.body as V;
}
const read = async (t: TestApp, col: string, id: string) => (await t.admin("GET", api(`/${col}/${id}`))).body as V;
const count = async (t: TestApp, col: string) => (await t.admin("GET", api(`/${col}/count`))).body.total as number;

async function setup({ t }: Omit<TableState<undefined>, "s">) {
  const open = { read: "public", create: "public", update: "public", delete: "public" };
  await createCollection(t, "products", open, { field_rules: [{ field: "stock", min: 0 }] });
  await createCollection(t, "orders", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
  for (const c of ["audit", "n1", "n2", "n3", "n4"]) await createCollection(t, c, open);
  // Fields exist before the rows that roll back name them.
  await make(t, "orders", { product: "x", qty: 0, total: 0, for_user: "x", note: "x" }).catch(() => {});
}

scenarios<undefined>("async hooks with tx", { users: ["ann", "bob"], setup, app: { context: { hooks } } }, [
  {
    name: "an async beforeCreate reads and atomically updates another collection in the request's transaction",
    before: ({ t }) => make(t, "products", { price: 2.5, stock: 10 }),
    as: "ann",
    method: "POST",
    url: api("/orders"),
    body: ({ v }) => ({ product: (v as V)._id, qty: 4 }),
    status: 201,
    contains: ({ users }) => ({ qty: 4, total: 10, _owner_id: users.ann!.id }),
    // The hooks' tx writes are the admin's; the order is the caller's.
    events: ({ v, res, users }) => [
      { collection: "products", action: "update", id: (v as V)._id, record: { stock: 6 }, by: "admin" },
      { collection: "orders", action: "create", id: res.body._id, by: users.ann!.id },
      { collection: "audit", action: "create", record: { order: res.body._id }, by: "admin" },
    ],
  },
  {
    name: "a hook's failed tx.update (a field rule) rolls the whole request back: 422, no event, stock unchanged",
    before: ({ t }) => make(t, "products", { price: 1, stock: 3 }),
    as: "ann",
    method: "POST",
    url: api("/orders"),
    body: ({ v }) => ({ product: (v as V)._id, qty: 4 }),
    status: 422,
    answer: { errors: [{ field: "stock", rule: "min", message: '"stock" must be at least 0.' }] },
    events: [],
    after: async ({ t, v }) => expect((await read(t, "products", (v as V)._id)).stock).toBe(3),
  },
  {
    name: "a throw in an async afterCreate after its tx writes rolls back the record, the stock and the audit row",
    before: async ({ t }) => ({ product: await make(t, "products", { price: 1, stock: 5 }), audits: await count(t, "audit") }),
    as: "ann",
    method: "POST",
    url: api("/orders"),
    body: ({ v }) => ({ product: (v as V).product._id, qty: 1, note: "fail after" }),
    status: 409,
    answer: { error: "refused after the writes", code: "hook_rejected" },
    events: [],
    after: async ({ t, v }) => {
      expect((await read(t, "products", (v as V).product._id)).stock).toBe(5);
      expect(await count(t, "audit")).toBe((v as V).audits);
    },
  },
  {
    name: "a beforeCreate may set _owner_id: the record belongs to that user (and the caller no longer reads it)",
    before: ({ t }) => make(t, "products", { price: 1, stock: 5 }),
    as: "ann",
    method: "POST",
    url: api("/orders"),
    body: ({ v, users }) => ({ product: (v as V)._id, qty: 1, for_user: users.bob!.id }),
    status: 201,
    contains: ({ users }) => ({ _owner_id: users.bob!.id }),
    events: ({ res, users }) => [
      { collection: "products", action: "update", by: "admin" },
      { collection: "orders", action: "create", id: res.body._id, by: users.ann!.id },
      { collection: "audit", action: "create", by: "admin" },
    ],
    after: async ({ t, res, users }) => {
      const asBob = await t.req("GET", api(`/orders/${res.body._id}`), { token: users.bob!.token });
      expect({ status: asBob.status, owner: asBob.body._owner_id }).toEqual({ status: 200, owner: users.bob!.id });
      expect((await t.req("GET", api(`/orders/${res.body._id}`), { token: users.ann!.token })).status).toBe(404);
    },
  },
  {
    name: "hooks nest 3 deep: n1's hook creates in n2, whose hook creates in n3, whose hook reads through tx",
    method: "POST",
    url: api("/n1"),
    body: { deep: false },
    status: 201,
    events: ({ res }) => [`n1:create:${res.body._id}`, { collection: "n2", action: "create", record: { from: res.body._id } }, "n3:create"],
  },
  {
    name: "a 4th level of hooks may not use tx: 400 hook_rejected, and nothing of the chain stays",
    before: async ({ t }) => ({ n1: await count(t, "n1"), n2: await count(t, "n2"), n3: await count(t, "n3"), n4: await count(t, "n4") }),
    method: "POST",
    url: api("/n1"),
    body: { deep: true },
    status: 400,
    answer: { error: "hooks may nest at most 3 deep: a hook at depth 4 may not use tx", code: "hook_rejected" },
    events: [],
    after: async ({ t, v }) => {
      const now = { n1: await count(t, "n1"), n2: await count(t, "n2"), n3: await count(t, "n3"), n4: await count(t, "n4") };
      expect(now as V).toEqual(v as V);
    },
  },
]);
