import { beforeEach, describe, expect, test } from "bun:test";
import { updateCollectionRules } from "../../src/collections/admin.ts";
import { requireCollection, saveCollectionRow } from "../../src/catalog/catalog.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { inTransaction } from "../../src/transaction.ts";
import { memoryLogger } from "../../src/log.ts";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";
import { secondEngine } from "../helpers/engine.ts";
import { countRows, schemaObjectExists, tableExists } from "../helpers/schema.ts";

// Every test gets its own app; each block creates the collections its tests use.
const t = appPerTest();

const C = "/api/v1/admin/collections";
const DEFAULTS = { read: "public", create: "authenticated", update: "owner", delete: "owner" };

describe("POST /admin/collections", () => {
  test("creates a collection: 201 with the exact collection object, missing rules taking the defaults", async () => {
    const before = t.clock.now();
    const res = await t.admin("POST", C, { name: "posts", rules: { read: "authenticated" } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      name: "posts",
      rules: { ...DEFAULTS, read: "authenticated" },
      field_rules: [],
      fields: [],
      indexes: [],
      fts: { enabled: false, fields: [] },
      created_at: before,
      updated_at: before,
    });
  });

  test("without rules every rule takes its default, and a role rule is kept as given", async () => {
    const res = await t.admin("POST", C, { name: "notes" });
    expect(res.status).toBe(201);
    expect(res.body.rules).toEqual(DEFAULTS);
    const role = await t.admin("POST", C, { name: "staffonly", rules: { create: { role: "staff" }, delete: "disabled" } });
    expect(role.body.rules).toEqual({ ...DEFAULTS, create: { role: "staff" }, delete: "disabled" });
  });

  test("the new collection's table exists in the database", async () => {
    await createCollection(t, "posts");
    expect(await tableExists(t, "posts")).toBe(true);
  });

  test.each([
    ["an unknown rule value", { name: "r1", rules: { read: "everyone" } }],
    ["an unknown rule key", { name: "r2", rules: { list: "public" } }],
    ["a role rule without a name", { name: "r3", rules: { read: { role: "" } } }],
    ["a role rule with extra keys", { name: "r4", rules: { read: { role: "a", x: 1 } } }],
    ["rules that are not an object", { name: "r5", rules: "public" }],
    ["a number as rule", { name: "r6", rules: { read: 1 } }],
  ])("%s is 400 bad_request", async (_n, body) => {
    const res = await t.admin("POST", C, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    expect((await t.admin("GET", `${C}/${body.name}`)).status).toBe(404);
  });

  test.each([
    ["auth"],
    ["admin"],
    ["health"],
    ["Admin"],
    ["sqlite_master"],
    ["SQLITE_x"],
    ["1posts"],
    ["_posts"],
    ["posts-2"],
    ["po sts"],
    ["posts;DROP TABLE _users"],
    ['x" ("a'],
    ["a".repeat(65)],
    [""],
    [42],
    [null],
  ])("the name %p is refused with 400", async (name) => {
    const res = await t.admin("POST", C, { name });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
  });

  test("the refusal of a reserved name names every reserved name", async () => {
    for (const name of ["fn", "ready", "openapi"]) {
      const res = await t.admin("POST", C, { name });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe(`invalid collection name "${name}": use a letter then letters, digits or _ (at most 64), not auth, admin, health, ready, realtime, openapi, fn, sqlite_* or pg_*`);
    }
  });

  test("a name of 64 characters is accepted", async () => {
    expect((await t.admin("POST", C, { name: "a".repeat(64) })).status).toBe(201);
  });

  test("a taken name is 409 conflict, also in another letter case", async () => {
    await createCollection(t, "posts");
    for (const name of ["posts", "POSTS", "Posts"]) {
      const res = await t.admin("POST", C, { name });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.any(String), code: "conflict" });
    }
  });

  test("a body that is not an object is 400, malformed JSON 400 invalid_json", async () => {
    expect((await t.admin("POST", C, ["posts"])).status).toBe(400);
    const bad = await t.admin("POST", C, "{name:");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_json");
  });
});

describe("reading collections", () => {
  beforeEach(async () => {
    await createCollection(t, "posts", { read: "authenticated" });
    await createCollection(t, "notes");
  });

  test("GET /admin/collections lists every collection as { items }", async () => {
    const res = await t.admin("GET", C);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(["items"]);
    const names = res.body.items.map((c: { name: string }) => c.name);
    expect(names).toContain("posts");
    expect(names).toContain("notes");
    const posts = res.body.items.find((c: { name: string }) => c.name === "posts");
    expect(Object.keys(posts).sort()).toEqual(["created_at", "fields", "fts", "field_rules", "indexes", "name", "rules", "updated_at"].sort());
  });

  test("GET /admin/collections/:name gives the object, the name matched case-insensitively", async () => {
    const res = await t.admin("GET", `${C}/POSTS`);
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("posts");
  });

  test("an unknown collection is 404 not_found", async () => {
    for (const [m, path] of [
      ["GET", `${C}/nope`],
      ["PATCH", `${C}/nope`],
      ["PUT", `${C}/nope/rules`],
      ["DELETE", `${C}/nope`],
      ["GET", `${C}/nope/stats`],
      ["DELETE", `${C}/nope/records/01ARZ3NDEKTSV4RRFFQ69G5FAV`],
    ] as const) {
      const res = await t.admin(m, path, m === "PATCH" || m === "PUT" ? { rules: { read: "public" } } : undefined);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String), code: "not_found" });
    }
  });

  test("fields appear in the collection object with their types once records set them", async () => {
    await t.admin("POST", C, { name: "typed" });
    const rec = await t.admin("POST", "/api/v1/typed", { s: "x", n: 1.5, b: true, o: { a: 1 }, a: [1], z: null });
    expect(rec.status).toBe(201);
    const res = await t.admin("GET", `${C}/typed`);
    expect(res.body.fields).toEqual([
      { name: "s", type: "text" },
      { name: "n", type: "number" },
      { name: "b", type: "boolean" },
      { name: "o", type: "json" },
      { name: "a", type: "json" },
    ]);
  });
});

describe("changing rules", () => {
  beforeEach(() => createCollection(t, "notes"));
  const updateByAuthenticated = async () =>
    expect((await t.admin("PUT", `${C}/notes/rules`, { rules: { update: "authenticated" } })).status).toBe(200);

  test("PUT …/rules with partial rules replaces only the given keys and bumps updated_at", async () => {
    t.clock.advance(1000);
    const res = await t.admin("PUT", `${C}/notes/rules`, { rules: { update: "authenticated", delete: { role: "mod" } } });
    expect(res.status).toBe(200);
    expect(res.body.rules).toEqual({ ...DEFAULTS, update: "authenticated", delete: { role: "mod" } });
    expect(res.body.updated_at).toBe(t.clock.now());
    expect(res.body.updated_at).toBeGreaterThan(res.body.created_at);
    expect((await t.admin("GET", `${C}/notes`)).body.rules.delete).toEqual({ role: "mod" });
  });

  test("PUT …/rules with field_rules replaces the list and keeps the rules", async () => {
    await updateByAuthenticated();
    const fr = [{ field: "title", required: true, min: 3 }];
    const res = await t.admin("PUT", `${C}/notes/rules`, { field_rules: fr });
    expect(res.status).toBe(200);
    expect(res.body.field_rules).toEqual(fr);
    expect(res.body.rules.update).toBe("authenticated");
    const cleared = await t.admin("PUT", `${C}/notes/rules`, { field_rules: [] });
    expect(cleared.body.field_rules).toEqual([]);
  });

  test("PATCH /admin/collections/:name changes rules the same way", async () => {
    await updateByAuthenticated();
    const res = await t.admin("PATCH", `${C}/notes`, { rules: { read: "owner" } });
    expect(res.status).toBe(200);
    expect(res.body.rules.read).toBe("owner");
    expect(res.body.rules.update).toBe("authenticated");
  });

  test.each([
    ["an unknown top-level key", { rules: { read: "public" }, colour: "red" }],
    ["an unknown rule key", { rules: { write: "public" } }],
    ["a bad rule value", { rules: { read: "nobody" } }],
    ["neither rules nor field_rules", {}],
    ["field_rules that are not an array", { field_rules: { field: "a" } }],
    ["a field rule with an unknown key", { field_rules: [{ field: "a", between: 1 }] }],
    ["a field rule without a field", { field_rules: [{ required: true }] }],
    ["a body that is an array", [{ rules: {} }]],
  ])("%s is 400 bad_request and changes nothing", async (_n, body) => {
    const before = (await t.admin("GET", `${C}/notes`)).body;
    const res = await t.admin("PUT", `${C}/notes/rules`, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
    expect((await t.admin("GET", `${C}/notes`)).body).toEqual(before);
  });
});

describe("changes from another process", () => {
  beforeEach(() => createCollection(t, "shared", { create: "public" }));

  test("a catalog write from a snapshot older than a field another process added keeps that field", async () => {
    // A second connection on the same data dir, as the CLI opens it, holding a snapshot without fields.
    const other = createContext(t.config, { clock: t.clock, log: memoryLogger(), ...(await secondEngine(t)) });
    const stale = await requireCollection(other, "shared");
    expect((await t.req("POST", "/api/v1/shared", { body: { added: 1 } })).status).toBe(201);
    await inTransaction(other, () => saveCollectionRow(other, { ...stale, rules: { ...stale.rules, read: "authenticated" } }));
    await closeContext(other);
    const col = (await t.admin("GET", `${C}/shared`)).body;
    expect(col.rules.read).toBe("authenticated");
    expect(col.fields).toEqual([{ name: "added", type: "number" }]);
    expect((await t.req("POST", "/api/v1/shared", { body: { added: 2 } })).status).toBe(201);
  });

  test("rules changed by another process are seen at once", async () => {
    const other = createContext(t.config, { clock: t.clock, log: memoryLogger(), ...(await secondEngine(t)) });
    await updateCollectionRules(other, "shared", { rules: { create: "disabled" } });
    await closeContext(other);
    const res = await t.req("POST", "/api/v1/shared", { body: { added: 3 } });
    expect(res.status).toBe(403);
  });
});

describe("stats and deletion", () => {
  beforeEach(() => createCollection(t, "counted"));

  test("stats count non-deleted records and give the latest write among them", async () => {
    const empty = await t.admin("GET", `${C}/counted/stats`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ row_count: 0, last_write: null });
    const a = await t.admin("POST", "/api/v1/counted", { n: 1 });
    t.clock.advance(500);
    const b = await t.admin("POST", "/api/v1/counted", { n: 2 });
    expect((await t.admin("GET", `${C}/counted/stats`)).body).toEqual({ row_count: 2, last_write: b.body._created_at });
    t.clock.advance(500);
    await t.admin("DELETE", `/api/v1/counted/${b.body._id}`);
    expect((await t.admin("GET", `${C}/counted/stats`)).body).toEqual({ row_count: 1, last_write: a.body._created_at });
  });

  test("hard delete removes an active record: 200 { ok: true, id }, then 404", async () => {
    const rec = await t.admin("POST", "/api/v1/counted", { n: 3 });
    const res = await t.admin("DELETE", `${C}/counted/records/${rec.body._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, id: rec.body._id });
    expect((await t.admin("GET", `/api/v1/counted/${rec.body._id}?include_deleted=true`)).status).toBe(404);
    const again = await t.admin("DELETE", `${C}/counted/records/${rec.body._id}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("not_found");
  });

  test("hard delete removes a soft-deleted record too", async () => {
    const rec = await t.admin("POST", "/api/v1/counted", { n: 4 });
    await t.admin("DELETE", `/api/v1/counted/${rec.body._id}`);
    const res = await t.admin("DELETE", `${C}/counted/records/${rec.body._id}`);
    expect(res.body).toEqual({ ok: true, id: rec.body._id });
    expect(await countRows(t, "counted", '"_id" = ?', [rec.body._id])).toBe(0);
  });

  test("hard delete needs admin credentials: a user's token is 403, none 401", async () => {
    const rec = await t.admin("POST", "/api/v1/counted", { n: 5 });
    const u = await registerUser(t, "hd@example.com");
    expect((await t.req("DELETE", `${C}/counted/records/${rec.body._id}`, { token: u.token })).status).toBe(403);
    expect((await t.req("DELETE", `${C}/counted/records/${rec.body._id}`)).status).toBe(401);
    expect((await t.admin("GET", `/api/v1/counted/${rec.body._id}`)).status).toBe(200);
  });

  test("DELETE /admin/collections/:name answers { ok: true }, drops the table, and the data API then says 404", async () => {
    const res = await t.admin("DELETE", `${C}/counted`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(await schemaObjectExists(t, "counted")).toBe(false);
    expect((await t.admin("GET", `${C}/counted`)).status).toBe(404);
    expect((await t.admin("GET", "/api/v1/counted")).status).toBe(404);
    expect((await t.admin("DELETE", `${C}/counted`)).status).toBe(404);
  });

  test("a deleted collection's name can be used again, starting empty", async () => {
    expect((await t.admin("POST", "/api/v1/counted", { n: 1 })).status).toBe(201);
    expect((await t.admin("DELETE", `${C}/counted`)).status).toBe(200);
    const res = await t.admin("POST", C, { name: "counted" });
    expect(res.status).toBe(201);
    expect(res.body.fields).toEqual([]);
    expect((await t.admin("GET", "/api/v1/counted")).body.total).toBe(0);
  });
});
