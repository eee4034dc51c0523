import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// GET /admin/schema and POST /admin/schema/apply (CONTRACT §13): the database made to match a document, all
// or nothing; a second apply of the same document changes nothing; drops only with prune.

setDefaultTimeout(60_000);

let t: TestApp;
beforeEach(async () => {
  t = createTestApp();
  await t.ready;
});
afterEach(() => t.close());

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await t.admin(method, `/api/v1${path}`, body);
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}
const apply = (schema: unknown, opts: { dry_run?: boolean; prune?: boolean } = {}) => t.admin("POST", "/api/v1/admin/schema/apply", { schema, ...opts });
const applied = async (schema: unknown, opts: { dry_run?: boolean; prune?: boolean } = {}) => {
  const res = await apply(schema, opts);
  if (res.status !== 200) throw new Error(`apply: ${res.status} ${res.text}`);
  return res.body as { changes: { action: string; target: string; detail: string }[]; applied: boolean };
};
const actions = (plan: { changes: { action: string; target: string }[] }) => plan.changes.map((c) => `${c.action} ${c.target}`);

/** A whole application's schema: every kind of thing a document holds. */
const APP = {
  collections: [
    {
      name: "users_profiles",
      rules: { read: "public", create: "authenticated", update: "owner", delete: "owner" },
      fields: [
        { name: "handle", type: "text" },
        { name: "bio", type: "text" },
      ],
      indexes: [{ fields: ["handle"], unique: true }],
    },
    {
      name: "posts",
      rules: { read: "public", create: { role: "editor" } },
      field_rules: [{ field: "title", required: true, min: 3 }],
      fields: [
        { name: "title", type: "text" },
        { name: "views", type: "number" },
        { name: "published", type: "boolean" },
        { name: "meta", type: "json" },
        { name: "author", type: "text" },
      ],
      indexes: [{ name: "posts_by_views", fields: ["published", "views"] }],
      fts: { enabled: true },
    },
    { name: "tags", fields: [{ name: "label", type: "text" }] },
  ],
  relations: [
    { from_col: "posts", from_field: "author", to_col: "users_profiles", type: "one", on_delete: "cascade" },
    { from_col: "users_profiles", from_field: "posts", to_col: "posts", type: "many" },
    { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" },
  ],
};

describe("GET /admin/schema", () => {
  test("is every collection object and every relation", async () => {
    await applied(APP);
    const schema = await ok("GET", "/admin/schema");
    expect(Object.keys(schema)).toEqual(["collections", "relations"]);
    expect(schema.collections).toEqual((await ok("GET", "/admin/collections")).items);
    expect(schema.relations).toEqual((await ok("GET", "/admin/relations")).items);
    expect((await t.req("GET", "/api/v1/admin/schema")).status).toBe(401);
  });
});

describe("POST /admin/schema/apply", () => {
  test("makes an empty database match a document, in order; a second apply, and the export applied, change nothing", async () => {
    const plan = await applied(APP);
    expect(plan.applied).toBe(true);
    expect(actions(plan)).toEqual([
      "create_collection users_profiles",
      "create_collection posts",
      "create_collection tags",
      "create_relation posts.author",
      "create_relation users_profiles.posts",
      "create_relation posts.tags",
      "create_index users_profiles(handle)",
      "create_index posts.posts_by_views",
      "enable_fts posts",
    ]);
    expect(plan.changes.every((c) => typeof c.detail === "string" && c.detail.length > 0)).toBe(true);
    // The plan names the fields the index takes: not `author`, a relation's id field.
    expect(plan.changes.find((c) => c.action === "enable_fts")!.detail).toBe("over title");
    const posts = await ok("GET", "/admin/collections/posts");
    expect(posts).toMatchObject({
      rules: { read: "public", create: { role: "editor" }, update: "owner", delete: "owner" },
      field_rules: [{ field: "title", required: true, min: 3 }],
      fields: APP.collections[1]!.fields,
      indexes: [{ name: "posts_by_views", fields: ["published", "views"], unique: false }],
      fts: { enabled: true, fields: ["title"] },
    });
    const rels = (await ok("GET", "/admin/relations")).items;
    expect(rels.map((r: any) => [r.from_col, r.from_field, r.to_col, r.to_field, r.type, r.on_delete])).toEqual([
      ["posts", "author", "users_profiles", null, "one", "cascade"],
      ["users_profiles", "posts", "posts", "author", "many", "restrict"],
      ["posts", "tags", "tags", null, "many_via", "restrict"],
    ]);
    expect(await applied(APP)).toEqual({ changes: [], applied: true });
    expect(await applied(await ok("GET", "/admin/schema"))).toEqual({ changes: [], applied: true });
    expect(await applied(await ok("GET", "/admin/schema"), { prune: true })).toEqual({ changes: [], applied: true });
  });

  test("a dry run lists the same changes, checks them, and changes nothing", async () => {
    const dry = await applied(APP, { dry_run: true });
    expect(dry.applied).toBe(false);
    expect(dry.changes).toEqual((await applied(APP, { dry_run: true })).changes);
    expect((await ok("GET", "/admin/schema")).collections).toEqual([]);
    expect((await applied(APP)).changes).toEqual(dry.changes);
  });

  test("fields: added, renamed with renamed_from (values kept), retyped; a second apply changes nothing", async () => {
    await applied(APP);
    const made = await ok("POST", "/posts", { title: "hello world", views: 3, published: true }, 201);
    const next = structuredClone(APP);
    next.collections[1]!.fields = [
      { name: "headline", type: "text", renamed_from: "title" } as any,
      { name: "views", type: "text" },
      { name: "published", type: "boolean" },
      { name: "meta", type: "json" },
      { name: "author", type: "text" },
      { name: "slug", type: "text" },
    ];
    next.collections[1]!.field_rules = [{ field: "headline", required: true, min: 3 }];
    const plan = await applied(next);
    expect(plan.changes).toEqual([
      { action: "rename_field", target: "posts.headline", detail: "renamed from title" },
      { action: "retype_field", target: "posts.views", detail: "number → text" },
      { action: "add_field", target: "posts.slug", detail: "text" },
    ]);
    const rec = await ok("GET", `/posts/${made._id}`);
    expect(rec).toMatchObject({ headline: "hello world", views: "3", slug: null });
    expect("title" in rec).toBe(false);
    expect((await ok("GET", "/posts?search=hello")).total).toBe(1);
    expect(await applied(next)).toEqual({ changes: [], applied: true });
  });

  test("what the document lacks is dropped only with prune", async () => {
    await applied(APP);
    await ok("POST", "/admin/collections", { name: "legacy" }, 201);
    await ok("POST", "/admin/collections/posts/fields", { name: "old", type: "text" }, 201);
    await ok("POST", "/admin/collections/tags/indexes", { fields: ["label"] }, 201);
    const kept = await ok("POST", "/posts", { title: "kept", old: "value" }, 201);
    expect(await applied(APP)).toEqual({ changes: [], applied: true });
    expect((await ok("GET", `/posts/${kept._id}`)).old).toBe("value");

    const lean = structuredClone(APP);
    lean.relations = lean.relations.filter((r) => r.type !== "many_via");
    const pruned = await applied(lean, { prune: true });
    expect(actions(pruned)).toEqual(["drop_relation posts.tags", "drop_index tags.idx_tags_label", "drop_field posts.old", "drop_collection legacy"]);
    expect(pruned.changes.find((c) => c.action === "drop_field")!.detail).toContain("every value");
    expect((await ok("GET", "/admin/collections")).items.map((c: any) => c.name)).toEqual(["posts", "tags", "users_profiles"]);
    expect((await ok("GET", `/posts/${kept._id}`)).title).toBe("kept");
    expect("old" in (await ok("GET", `/posts/${kept._id}`))).toBe(false);
    expect(await applied(lean, { prune: true })).toEqual({ changes: [], applied: true });
  });

  test("rules, field rules, indexes, full text and on_delete are changed where they differ", async () => {
    await applied(APP);
    const next = structuredClone(APP) as any;
    next.collections[1].rules = { read: "authenticated" };
    next.collections[1].field_rules = [];
    next.collections[1].indexes = [{ name: "posts_by_views", fields: ["views"] }];
    next.collections[1].fts = { enabled: false };
    next.collections[2].fts = { enabled: true };
    next.relations[0].on_delete = "set_null";
    const plan = await applied(next);
    expect(plan.changes).toEqual([
      { action: "set_rules", target: "posts", detail: "read: public → authenticated" },
      { action: "drop_index", target: "posts.posts_by_views", detail: "(published, views): made again with other fields" },
      { action: "set_field_rules", target: "posts", detail: "0 field rules (was 1)" },
      { action: "update_relation", target: "posts.author", detail: "on_delete cascade → set_null" },
      { action: "create_index", target: "posts.posts_by_views", detail: "(views)" },
      { action: "disable_fts", target: "posts", detail: "the full-text index is dropped" },
      { action: "enable_fts", target: "tags", detail: "over label" },
    ]);
    expect((await ok("GET", "/admin/relations")).items[0].on_delete).toBe("set_null");
    expect(await applied(next)).toEqual({ changes: [], applied: true });
  });

  test("with prune, a one relation's field the document does not list under fields stays: a second apply changes nothing", async () => {
    const doc = {
      collections: [{ name: "a1", fields: [{ name: "x", type: "text" }] }, { name: "b1" }],
      relations: [{ from_col: "a1", from_field: "b", to_col: "b1", type: "one" }],
    };
    expect(actions(await applied(doc, { prune: true }))).toEqual(["create_collection a1", "create_collection b1", "create_relation a1.b"]);
    expect((await applied(doc, { prune: true })).changes).toEqual([]);
    expect((await ok("GET", "/admin/relations")).items.map((r: { from_field: string }) => r.from_field)).toEqual(["b"]);
  });

  test("a file field's max_size, mime and max_count are changed where they differ; max_count across 1 is 409", async () => {
    const doc = (pic: Record<string, unknown>) => ({ collections: [{ name: "f1", fields: [{ name: "pic", type: "file", ...pic }] }] });
    await applied(doc({ max_size: 1000, mime: ["image/png"], max_count: 2 }));
    const changed = await applied(doc({ max_size: 2000, mime: ["image/jpeg"], max_count: 3 }));
    expect(actions(changed)).toEqual(["update_field f1.pic"]);
    const pic = (await ok("GET", "/admin/collections/f1")).fields.find((f: { name: string }) => f.name === "pic");
    expect(pic).toMatchObject({ type: "file", max_size: 2000, mime: ["image/jpeg"], max_count: 3 });
    expect((await applied(doc({ max_size: 2000, mime: ["image/jpeg"], max_count: 3 }))).changes).toEqual([]);
    const across = await apply(doc({ max_size: 2000, mime: ["image/jpeg"], max_count: 1 }));
    expect({ status: across.status, code: across.body.code }).toEqual({ status: 409, code: "conflict" });
    expect((await ok("GET", "/admin/collections/f1")).fields.find((f: { name: string }) => f.name === "pic").max_count).toBe(3);
  });

  test("a relation that differs otherwise than by on_delete is made again as the document has it, with or without prune", async () => {
    await applied(APP);
    const next = structuredClone(APP) as any;
    next.relations[2].to_col = "users_profiles";
    const plan = await applied(next);
    expect(actions(plan)).toEqual(["drop_relation posts.tags", "create_relation posts.tags"]);
    expect((await applied(next)).changes).toEqual([]);
    next.relations[2].to_col = "tags";
    expect(actions(await applied(next, { prune: true }))).toEqual(["drop_relation posts.tags", "create_relation posts.tags"]);
  });

  test("all or nothing: a change that fails fails the apply with its error, and nothing of it stays", async () => {
    await applied(APP);
    await ok("POST", "/posts", { title: "not a number", views: 1 }, 201);
    await ok("POST", "/posts", { title: "seven", views: 7 }, 201);
    const next = structuredClone(APP) as any;
    next.collections.push({ name: "brand_new", fields: [{ name: "x", type: "text" }] });
    next.collections[1].fields.push({ name: "added", type: "number" });
    next.collections[1].fields[0].type = "number";
    next.collections[0].rules = { read: "disabled" };
    const before = await ok("GET", "/admin/schema");
    const res = await apply(next);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: expect.stringContaining("retype_field posts.title"),
      code: "conflict",
      count: 2,
      change: { action: "retype_field", target: "posts.title", detail: "text → number" },
    });
    expect(await ok("GET", "/admin/schema")).toEqual(before);
    const dry = await apply(next, { dry_run: true });
    expect({ status: dry.status, count: dry.body.count }).toEqual({ status: 409, count: 2 });
  });

  test("a malformed document is 400 naming what is wrong, and changes nothing", async () => {
    const cases: [unknown, string][] = [
      [undefined, "schema is required"],
      ["posts", "schema must be an object"],
      [{ collections: {} }, "schema.collections must be an array"],
      [{ collections: [], extra: 1 }, 'schema: unknown key "extra"'],
      [{ collections: [{ name: "a", colour: "red" }] }, 'schema.collections[0]: unknown key "colour"'],
      [{ collections: [{ name: "auth" }] }, "schema.collections[0]: invalid collection name"],
      [{ collections: [{ name: "a" }, { name: "A" }] }, 'schema.collections: "A" is given twice'],
      [{ collections: [{ name: "a", fields: [{ name: "x", type: "date" }] }] }, 'schema.collections[0].fields[0] ("x"): "type" must be one of'],
      [{ collections: [{ name: "a", fields: [{ name: "x", type: "text" }, { name: "X", type: "text" }] }] }, 'the field "X" is declared twice'],
      [{ collections: [{ name: "a", fields: [{ name: "x", type: "text", renamed_from: "_id" }] }] }, '"renamed_from" must be a field name'],
      [{ collections: [{ name: "a", rules: { read: "everyone" } }] }, "invalid read rule"],
      [{ collections: [{ name: "a", indexes: [{ fields: [] }] }] }, '"fields" must be a non-empty array'],
      [{ collections: [{ name: "a", fields: [{ name: "s", type: "text" }], indexes: [{ name: "ix", fields: ["s"] }, { name: "IX", fields: ["_id"] }] }] }, 'schema.collections[0]: the index name "ix" is given twice'],
      [{ collections: [{ name: "a", fts: "yes" }] }, 'schema.collections[0].fts must be { "enabled": true|false }'],
      [{ collections: [{ name: "a" }], relations: [{ from_col: "a", from_field: "b", to_col: "zz", type: "one" }] }, 'unknown collection "zz"'],
      [{ collections: [{ name: "a" }], relations: [{ from_col: "a", from_field: "b", to_col: "a", type: "several" }] }, '"type" must be one of'],
    ];
    for (const [schema, message] of cases) {
      const res = await t.admin("POST", "/api/v1/admin/schema/apply", schema === undefined ? {} : { schema });
      expect({ schema, status: res.status, code: res.body.code, error: res.body.error }).toEqual({ schema, status: 400, code: "bad_request", error: expect.stringContaining(message) });
    }
    const extra = await t.admin("POST", "/api/v1/admin/schema/apply", { schema: { collections: [] }, force: true });
    expect({ status: extra.status, code: extra.body.code }).toEqual({ status: 400, code: "bad_request" });
    expect((await ok("GET", "/admin/schema")).collections).toEqual([]);
  });
});
