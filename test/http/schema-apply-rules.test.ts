import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// POST /admin/schema/apply with expression rules (CONTRACT §12, §13): a rule may name a collection the
// document makes after its own, a relation the document adds, or a field it renames; the document applies
// whatever its order, and what GET /admin/schema exports applies to an empty server as it is.

setDefaultTimeout(60_000);

let t: TestApp;
beforeEach(() => {
  t = createTestApp();
});
afterEach(() => t.close());

const apply = (schema: unknown) => t.admin("POST", "/api/v1/admin/schema/apply", { schema });
async function applied(schema: unknown) {
  const res = await apply(schema);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { applied: true } });
  return res.body as { changes: { action: string; target: string }[] };
}

test("a rule naming a collection made later in the document (@exists) and a relation the document adds", async () => {
  const doc = {
    collections: [
      { name: "aa", fields: [{ name: "room", type: "text" }], rules: { read: "@exists(zz, r = @record.room)" } },
      { name: "msgs", fields: [{ name: "body", type: "text" }], rules: { read: "room.boss = @auth.id" } },
      { name: "rooms", fields: [{ name: "title", type: "text" }, { name: "boss", type: "text" }] },
      { name: "zz", fields: [{ name: "r", type: "text" }] },
    ],
    relations: [{ from_col: "msgs", from_field: "room", to_col: "rooms", type: "one", on_delete: "restrict" }],
  };
  await applied(doc);
  const schema = (await t.admin("GET", "/api/v1/admin/schema")).body;
  const rule = (name: string) => schema.collections.find((c: { name: string }) => c.name === name).rules.read;
  expect([rule("aa"), rule("msgs")]).toEqual(["@exists(zz, r = @record.room)", "room.boss = @auth.id"]);
  expect((await applied(doc)).changes).toEqual([]);
  // The export applies to an empty server as it is (collections in name order, relations last).
  const other = createTestApp();
  try {
    const res = await other.admin("POST", "/api/v1/admin/schema/apply", { schema });
    expect(res.status).toBe(200);
    // The same schema, but for what each server stamps itself (ids, times).
    const own = (x: unknown) => JSON.stringify(x, (k, v) => (k === "id" || k.endsWith("_at") ? undefined : v));
    expect(own((await other.admin("GET", "/api/v1/admin/schema")).body)).toBe(own(schema));
  } finally {
    await other.close();
  }
});

test("an existing collection: a rule through a relation added in the same document, and a rename the rule follows", async () => {
  await applied({ collections: [{ name: "authors", fields: [{ name: "name", type: "text" }] }, { name: "posts", fields: [{ name: "title", type: "text" }], rules: { read: "title != null" } }] });
  await applied({
    collections: [{ name: "posts", rules: { update: "author.name = 'x'" } }],
    relations: [{ from_col: "posts", from_field: "author", to_col: "authors", type: "one", on_delete: "restrict" }],
  });
  const plan = await applied({ collections: [{ name: "posts", fields: [{ name: "headline", type: "text", renamed_from: "title" }], rules: { read: "headline != null" } }] });
  expect(plan.changes.map((c) => `${c.action} ${c.target}`)).toEqual(["rename_field posts.headline", "set_rules posts"]);
  const posts = (await t.admin("GET", "/api/v1/admin/collections/posts")).body;
  expect(posts.rules).toMatchObject({ read: "headline != null", update: "author.name = 'x'" });
});

test("a rule naming what the document lacks still fails the whole apply, changing nothing", async () => {
  const res = await apply({ collections: [{ name: "solo", fields: [{ name: "a", type: "text" }], rules: { read: "@exists(nowhere, a = 1)" } }] });
  expect(res.status).toBe(400);
  expect(res.body.error).toContain("nowhere");
  expect((await t.admin("GET", "/api/v1/admin/collections/solo")).status).toBe(404);
});

test("prune drops collections whose rules name what the same document drops; a kept rule naming it still blocks", async () => {
  const applyPruned = (schema: unknown) => t.admin("POST", "/api/v1/admin/schema/apply", { schema, prune: true });
  await applied({
    collections: [
      { name: "pa_authors", fields: [{ name: "name", type: "text" }] },
      { name: "pa_comments", fields: [{ name: "author", type: "text" }], rules: { read: 'author.name != "x"' } },
      { name: "pa_x1", fields: [{ name: "a", type: "number" }] },
      // Named after pa_x1: dropped in name order, it would be dropped last.
      { name: "pa_x2", fields: [{ name: "b", type: "number" }], rules: { read: "@exists(pa_x1, a > 1)" } },
      { name: "pa_x3", fields: [{ name: "c", type: "number" }], rules: { update: "@exists(pa_x1, a > 1)" } },
    ],
    relations: [{ from_col: "pa_comments", from_field: "author", to_col: "pa_authors", type: "one", on_delete: "restrict" }],
  });
  const changesOf = (body: { changes: { action: string; target: string }[] }) => body.changes.map((c) => `${c.action} ${c.target}`);
  const names = async () => ((await t.admin("GET", "/api/v1/admin/collections")).body.items as { name: string }[]).map((c) => c.name).filter((n) => n.startsWith("pa_")).sort();
  // pa_x3 is kept and its rule names pa_x1: the apply fails whole, naming the rule.
  const blocked = await applyPruned({ collections: [{ name: "pa_authors", fields: [{ name: "name", type: "text" }] }, { name: "pa_x3", fields: [{ name: "c", type: "number" }], rules: { update: "@exists(pa_x1, a > 1)" } }] });
  expect(blocked.status).toBe(409);
  expect(blocked.body.error).toContain('the update rule of "pa_x3"');
  expect(await names()).toEqual(["pa_authors", "pa_comments", "pa_x1", "pa_x2", "pa_x3"]);
  // Without pa_x3: the comments' relation, pa_x1's field a and pa_x1 itself go with the collections whose rules name them.
  const plan = await t.admin("POST", "/api/v1/admin/schema/apply", { schema: { collections: [{ name: "pa_authors", fields: [{ name: "name", type: "text" }] }] }, prune: true, dry_run: true });
  expect(plan.status).toBe(200);
  expect(changesOf(plan.body)).toEqual([
    "drop_relation pa_comments.author",
    "drop_collection pa_comments",
    "drop_collection pa_x1",
    "drop_collection pa_x2",
    "drop_collection pa_x3",
  ]);
  expect(await names()).toEqual(["pa_authors", "pa_comments", "pa_x1", "pa_x2", "pa_x3"]);
  // A kept pa_x1 losing field a, named by the dropped pa_x2's rule.
  const res = await applyPruned({ collections: [{ name: "pa_authors", fields: [{ name: "name", type: "text" }] }, { name: "pa_x1", fields: [] }] });
  expect(res.status).toBe(200);
  expect(changesOf(res.body)).toEqual([
    "drop_relation pa_comments.author",
    "drop_field pa_x1.a",
    "drop_collection pa_comments",
    "drop_collection pa_x2",
    "drop_collection pa_x3",
  ]);
  expect(await names()).toEqual(["pa_authors", "pa_x1"]);
});
