import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { MAX_TX_DEPTH, createTx, hookTx, nestedTx, withTx } from "../../src/records/tx.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { ADMIN_SECRET, createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// `tx` (CONTRACT §15): the data API's write path, with admin rights, inside the route handler's transaction.
const dir = mkdtempSync(join(tmpdir(), "baas-tx-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

writeFileSync(
  join(dir, "shop.ts"),
  `
const bump = () => { globalThis.__txSeen = (globalThis.__txSeen ?? 0) + 1; };
export default [
  {
    // The hook's own write adds the field the request's write adds too (a collection of no fields yet).
    collection: "threads",
    async beforeCreate({ data, tx }) {
      if (data.parent) await tx.create("threads", { title: "child", tag: "c" });
    },
    async beforeUpdate({ data, tx }) {
      if (data.spawn) await tx.create("threads", { title: "spawned", mood: 1 });
    },
  },
  {
    // An after hook that changes its own record: the answer is the version committed.
    collection: "articles",
    async afterCreate({ record, tx }) {
      await tx.update("articles", record._id, { slug: String(record.title).toLowerCase() });
    },
    async afterUpdate({ record, previous, tx }) {
      if (record.title !== previous.title) await tx.update("articles", record._id, { slug: String(record.title).toLowerCase() });
    },
  },
  {
    collection: "products",
    beforeCreate(e) {
      if (typeof e.data.name === "string") e.data.slug = e.data.name.toLowerCase();
      if (e.data.name === "forbidden") throw new Error("no forbidden products");
      if (e.data.name === "depth") e.data.depth = globalThis.__hookDepth?.() ?? null;
    },
  },
];
export const routes = [
  {
    method: "POST", path: "/buy/:id",
    handler: async ({ params, auth, tx }) => {
      const p = await tx.get("products", params.id);
      if (!p) throw { status: 404, message: "no such product" };
      await tx.create("orders", { product: p._id, buyer: auth?.id ?? null });
      // Read-modify-write inside the one transaction: no other order interleaves.
      const after = await tx.update("products", p._id, { stock: p.stock - 1 });
      return { stock: after.stock };
    },
  },
  {
    method: "POST", path: "/events-during",
    handler: async ({ tx }) => {
      const before = globalThis.__txEvents.length;
      await tx.create("products", { name: "Lamp", stock: 3 });
      return { during: globalThis.__txEvents.length - before };
    },
  },
  {
    method: "POST", path: "/try-then-go-on",
    handler: async ({ tx }) => {
      const outcomes = [];
      for (const name of ["forbidden", "Chair"]) {
        try { await tx.create("products", { name, stock: 1 }); outcomes.push("created"); }
        catch (e) { outcomes.push(e.status + " " + e.code + " " + e.message); }
      }
      try { await tx.create("orders", { product: "no-such-product" }); } catch (e) { outcomes.push(e.status + " " + JSON.stringify(e.errors)); }
      return outcomes;
    },
  },
  { method: "POST", path: "/uncaught-invalid", handler: async ({ tx }) => { await tx.create("products", { name: "Desk", stock: 5 }); await tx.create("products", { name: "Bad", stock: -1 }); } },
  {
    method: "POST", path: "/others/:id",
    handler: async ({ params, tx }) => {
      const got = await tx.get("notes", params.id);
      const listed = await tx.list("notes", { filter: "text:like:secret%", sort: "-text", limit: 10 });
      const updated = await tx.update("notes", params.id, { text: "secret (seen)" });
      return { got: got.text, listed: listed.map((n) => n.text), items: listed.items.map((n) => n.text), json: JSON.parse(JSON.stringify(listed)).length, updated: updated.text, owner: updated._owner_id };
    },
  },
  {
    method: "POST", path: "/reads",
    handler: async ({ tx }) => {
      const out = {};
      out.missing = await tx.get("products", "nope");
      try { await tx.get("no_such_collection", "x"); } catch (e) { out.noCollection = e.status + " " + e.code; }
      for (const [k, opts] of Object.entries({ limit: { limit: 0 }, filter: { filter: 5 }, op: { filter: "stock:zz:1" } })) {
        try { await tx.list("products", opts); } catch (e) { out[k] = e.status + " " + e.code; }
      }
      try { await tx.create("products", "not an object"); } catch (e) { out.data = e.status + " " + e.code; }
      return out;
    },
  },
  {
    method: "POST", path: "/remove/:id",
    handler: async ({ params, query, tx }) => {
      const r = await tx.delete("products", params.id, { hard: query.hard === "1" });
      return { r, after: await tx.get("products", params.id), lines: await tx.list("orders", { filter: "product:eq:" + params.id, include_deleted: true }) };
    },
  },
];
`,
);

let t: TestApp;
const events: ChangeEvent[] = [];
beforeAll(async () => {
  (globalThis as { __txEvents?: unknown }).__txEvents = events;
  t = createTestApp({ context: { hooks: await loadHooks(dir) } });
  await createCollection(t, "products");
  await createCollection(t, "orders");
  await createCollection(t, "notes", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
  expect((await t.admin("PUT", "/api/v1/admin/collections/products/rules", { field_rules: [{ field: "stock", min: 0 }] })).status).toBe(200);
  const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "orders", from_field: "product", to_col: "products", type: "one", on_delete: "cascade" });
  expect(rel.status).toBe(201);
  t.ctx.events.subscribe((e) => events.push(e));
}, 60_000); // a throwaway PostgreSQL cluster may take a while to start on a busy machine
afterAll(() => t.close());

const product = async (stock: number, name = "Pen") => (await t.admin("POST", "/api/v1/products", { name, stock })).body._id as string;
const stockOf = async (id: string) => (await t.admin("GET", `/api/v1/products/${id}`)).body.stock as number;

describe("the write path through tx", () => {
  test("hooks and field rules run: a create refused by a hook or a relation can be caught, and the rest commits", async () => {
    const res = await t.req("POST", "/api/v1/fn/try-then-go-on");
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      "400 hook_rejected no forbidden products",
      "created",
      `422 ${JSON.stringify([{ field: "product", rule: "relation", message: '"product" must name an existing record of "products".' }])}`,
    ]);
    const names = (await t.admin("GET", "/api/v1/products?limit=500")).body.items.map((p: { name: string; slug: string }) => `${p.name}/${p.slug}`);
    expect(names).toContain("Chair/chair");
    expect(names).not.toContain("forbidden/forbidden");
  });

  test("an uncaught validation failure answers it (422) and rolls back the handler's earlier writes", async () => {
    const seen = events.length;
    const res = await t.req("POST", "/api/v1/fn/uncaught-invalid");
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ field: "stock", rule: "min" });
    const names = (await t.admin("GET", "/api/v1/products?limit=500")).body.items.map((p: { name: string }) => p.name);
    expect(names).not.toContain("Desk");
    expect(events.length).toBe(seen);
  });

  test("change events go out after the commit, not during the handler", async () => {
    const seen = events.length;
    const res = await t.req("POST", "/api/v1/fn/events-during");
    expect(res.body).toEqual({ during: 0 });
    expect(events.slice(seen).map((e) => [e.collection, e.action, e.record.name])).toEqual([["products", "create", "Lamp"]]);
  });

  test("admin rights: a user's route reads and changes another user's owner-only record", async () => {
    const a = await registerUser(t, "tx-a@example.com");
    const b = await registerUser(t, "tx-b@example.com");
    const note = await t.req("POST", "/api/v1/notes", { token: a.token, body: { text: "secret of a" } });
    expect((await t.req("GET", `/api/v1/notes/${note.body._id}`, { token: b.token })).status).toBe(404);
    const res = await t.req("POST", `/api/v1/fn/others/${note.body._id}`, { token: b.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ got: "secret of a", listed: ["secret of a"], items: ["secret of a"], json: 1, updated: "secret (seen)", owner: a.id });
  });

  test("reads: a missing record is null, a missing collection 404, bad options 400", async () => {
    const res = await t.req("POST", "/api/v1/fn/reads");
    expect(res.body).toEqual({ missing: null, noCollection: "404 not_found", limit: "400 bad_request", filter: "400 bad_request", op: "400 bad_request", data: "400 bad_request" });
  });

  test("delete: soft by default, hard on request; relations' on_delete runs (cascade)", async () => {
    for (const hard of [false, true]) {
      const id = await product(5);
      expect((await t.req("POST", `/api/v1/fn/buy/${id}`)).status).toBe(200);
      const res = await t.req("POST", `/api/v1/fn/remove/${id}${hard ? "?hard=1" : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.after).toBeNull();
      if (hard) {
        expect(res.body.r).toEqual({ ok: true, id });
        expect(res.body.lines).toEqual([]);
      } else {
        expect(res.body.r._deleted_at).toBeNumber();
        expect(res.body.lines.length).toBe(1);
        expect(res.body.lines[0]._deleted_at).toBeNumber();
      }
    }
  });

  test("concurrent read-modify-write in one transaction loses no update, and never goes below the rule", async () => {
    const id = await product(6);
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.req("POST", `/api/v1/fn/buy/${id}`)));
    const statuses = answers.map((a) => a.status);
    const ok = statuses.filter((s) => s === 200).length;
    // Six succeed; the rest meet `min: 0` (422), or on PostgreSQL maybe a conflict after retries (409/503): never a 500.
    expect(statuses.every((s) => s === 200 || s === 422 || s === 409 || s === 503)).toBe(true);
    expect(await stockOf(id)).toBe(6 - ok);
    const orders = (await t.admin("GET", `/api/v1/orders?filter=product:eq:${id}&limit=500`)).body.items.length;
    expect(orders).toBe(ok);
    if (!onPostgres) expect(ok).toBe(6);
  });
});

describe("fields a hook's own write adds", () => {
  test("a create or update that adds the same new field as the hook's write before it: 201/200, no 500; a type clash is 422", async () => {
    await createCollection(t, "threads");
    const made = await t.admin("POST", "/api/v1/threads", { title: "t1", parent: true, tag: "p" });
    expect({ status: made.status, tag: made.body.tag }).toEqual({ status: 201, tag: "p" });
    const tags = (await t.admin("GET", "/api/v1/threads?sort=tag")).body.items.map((r: { tag: string }) => r.tag);
    expect(tags).toEqual(["c", "p"]);
    const updated = await t.admin("PATCH", `/api/v1/threads/${made.body._id}`, { spawn: true, mood: 2 });
    expect({ status: updated.status, mood: updated.body.mood }).toEqual({ status: 200, mood: 2 });
    // The hook made `mood` a number: text for it is refused as for any number field, and nothing is written.
    const clash = await t.admin("PATCH", `/api/v1/threads/${made.body._id}`, { spawn: true, mood: "sad" });
    expect({ status: clash.status, errors: clash.body.errors }).toEqual({ status: 422, errors: [{ field: "mood", rule: "type", message: '"mood" must be a number.' }] });
    expect((await t.admin("GET", "/api/v1/threads?filter=title:eq:spawned")).body.items.length).toBe(1);
  });
});

describe("after hooks that change their own record", () => {
  test("the create's and the update's answers, and their ETags, are the version the transaction commits", async () => {
    await createCollection(t, "articles");
    const made = await t.admin("POST", "/api/v1/articles", { title: "Hello" });
    expect({ status: made.status, slug: made.body.slug }).toEqual({ status: 201, slug: "hello" });
    const read = await t.admin("GET", `/api/v1/articles/${made.body._id}`);
    expect(read.body).toEqual(made.body);
    expect(made.headers.get("etag")).toBe(read.headers.get("etag"));
    const renamed = await t.req("PATCH", `/api/v1/articles/${made.body._id}`, { token: ADMIN_SECRET, body: { title: "World" }, headers: { "if-match": made.headers.get("etag")! } });
    expect({ status: renamed.status, slug: renamed.body.slug }).toEqual({ status: 200, slug: "world" });
    const again = await t.admin("GET", `/api/v1/articles/${made.body._id}`);
    expect([renamed.headers.get("etag"), renamed.body]).toEqual([again.headers.get("etag"), again.body]);
  });
});

describe("depth", () => {
  test(`handles nest ${MAX_TX_DEPTH} deep; a deeper one refuses every call (400 hook_rejected) and its caller rolls back`, async () => {
    await t.ready;
    const id = await product(1, "Deep");
    let tx = createTx(t.ctx);
    for (let d = 1; d <= MAX_TX_DEPTH; d++) {
      tx = nestedTx(t.ctx, tx);
      expect(tx.depth).toBe(d);
      expect((await tx.get("products", id))?.name).toBe("Deep");
    }
    // A hook learns the depth of the tx call whose write runs it: 1 below a route handler's, 1 for a client's request.
    (globalThis as { __hookDepth?: () => number }).__hookDepth = () => hookTx(t.ctx).depth;
    const depths: number[] = [];
    for (const handle of [createTx(t.ctx), nestedTx(t.ctx, createTx(t.ctx))]) depths.push((await handle.create("products", { name: "depth", stock: 1 })).depth as number);
    depths.push((await t.admin("POST", "/api/v1/products", { name: "depth", stock: 1 })).body.depth);
    expect(depths).toEqual([1, 2, 1]);
    const tooDeep = nestedTx(t.ctx, tx);
    const err = (await tooDeep.get("products", id).catch((e: unknown) => e)) as { status: number; code: string; message: string };
    expect([err.status, err.code]).toEqual([400, "hook_rejected"]);
    expect(err.message).toContain(`at most ${MAX_TX_DEPTH} deep`);
    // The refusal inside a transaction rolls back what was written before it.
    const failed = await withTx(t.ctx, async (outer) => {
      await outer.update("products", id, { stock: 0 });
      await nestedTx(t.ctx, tx).update("products", id, { stock: 1 });
    }).catch((e: unknown) => e);
    expect((failed as { code: string }).code).toBe("hook_rejected");
    expect(await stockOf(id)).toBe(1);
  });
});
