import { expect, test } from "bun:test";
import { openCollection } from "../../src/catalog/catalog.ts";
import { inTransaction } from "../../src/transaction.ts";
import { AppError } from "../../src/errors.ts";
import { appPerTest, createCollection, createTestApp } from "../helpers/app.ts";

// What a write transaction changes of the catalog (a new field, the relations it reloads) stays its own
// until it commits: other requests read what is committed, and a rollback leaves nothing behind, also
// for changes another process commits later.

const t = appPerTest(async (t) => {
  await createCollection(t, "people", { read: "public", create: "public" });
  await createCollection(t, "posts", { read: "public", create: "public" });
  await createCollection(t, "tags", { read: "public", create: "public" });
  const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "people", type: "one" });
  expect(rel.status).toBe(201);
});

const SYSTEM = ["_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at"];

test("reads running while a create adds a field answer 200 with the fields committed, the new one null at most", async () => {
  const person = (await t.req("POST", "/api/v1/people", { body: { name: "ann" } })).body._id;
  const first = await t.req("POST", "/api/v1/posts", { body: { author: person, title: "one" } });
  expect(first.status).toBe(201);
  const id = first.body._id;
  for (let round = 0; round < 5; round++) {
    const field = `extra${round}`;
    // Reads sent one microtask after the other while the create runs: some are handled while its transaction,
    // which adds the field, is open.
    const creating = t.req("POST", "/api/v1/posts", { body: { author: person, title: "two", [field]: "x" } });
    const pending: Promise<Awaited<typeof creating>>[] = [];
    for (let i = 0; i < 40; i++) {
      await Promise.resolve();
      pending.push(t.req("GET", "/api/v1/posts?limit=5"), t.req("GET", `/api/v1/posts/${id}`));
    }
    const [created, ...reads] = await Promise.all([creating, ...pending]);
    expect(created.status).toBe(201);
    expect(created.body[field]).toBe("x");
    for (const r of reads) {
      expect(r.status).toBe(200);
      const records = r.body.items ?? [r.body];
      for (const rec of records) {
        const allowed = new Set([...SYSTEM, "author", "title", ...Array.from({ length: round + 1 }, (_, i) => `extra${i}`)]);
        for (const key of Object.keys(rec)) expect(allowed.has(key)).toBe(true);
        if (rec._id === id) expect(rec[field] ?? null).toBeNull();
      }
    }
  }
  const after = await t.req("GET", `/api/v1/posts/${id}`);
  expect(after.body.extra4).toBeNull();
});

test("after a bulk that added a field and rolled back, a relation another process creates is used at the next request", async () => {
  expect((await t.req("POST", "/api/v1/posts", { body: { title: "seed" } })).status).toBe(201);
  // Element 0 adds a field (the catalog changes inside the transaction), element 1 fails: nothing stays.
  const bulk = await t.req("POST", "/api/v1/posts/bulk", { body: [{ title: "a", extra: 1 }, { title: 5 }] });
  expect(bulk.status).toBe(422);
  expect(bulk.body.index).toBe(1);

  // Another process on the same database (the CLI, another node) creates a many_via relation.
  const other = createTestApp({ dir: t.dir });
  try {
    const via = await other.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" });
    expect(via.status).toBe(201);
  } finally {
    await other.close();
  }

  const listed = await t.admin("GET", "/api/v1/admin/relations");
  expect(listed.status).toBe(200);
  expect(listed.body.items.map((r: { from_field: string }) => r.from_field).sort()).toEqual(["author", "tags"]);
  const bad = await t.req("POST", "/api/v1/posts", { body: { title: "x", tags: ["NOPE"] } });
  expect(bad.status).toBe(422);
  expect(bad.body.errors[0]).toMatchObject({ field: "tags", rule: "relation" });
  const fields = (await t.admin("GET", "/api/v1/admin/collections/posts")).body.fields.map((f: { name: string }) => f.name);
  expect(fields).not.toContain("extra");
  expect(fields).not.toContain("tags");
});

test("a write that looked its collection up before a delete committed gets 404 inside its transaction", async () => {
  await createCollection(t, "drops", { read: "public", create: "public" });
  await t.ready;
  expect((await openCollection(t.ctx, "drops")).name).toBe("drops");
  expect((await t.admin("DELETE", "/api/v1/admin/collections/drops")).status).toBe(200);
  // Every write resolves its collection again at the start of its transaction (create, bulk, batch, update, delete).
  const err = await inTransaction(t.ctx, async () => openCollection(t.ctx, "drops")).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).status).toBe(404);
  expect((err as AppError).message).toBe('collection "drops" not found');
});
