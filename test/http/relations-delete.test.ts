import { afterAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createTestApp, type TestApp } from "../helpers/app.ts";

const t = createTestApp();
afterAll(() => t.close());

let n = 0;
/** Fresh collections for one scenario: a target `<p>a` and a source `<p>b` whose `ref` points at it. */
async function pair(onDelete?: string) {
  const p = `s${++n}`;
  const a = `${p}a`;
  const b = `${p}b`;
  for (const name of [a, b]) expect((await t.admin("POST", "/api/v1/admin/collections", { name })).status).toBe(201);
  const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: b, from_field: "ref", to_col: a, type: "one", ...(onDelete ? { on_delete: onDelete } : {}) });
  expect(rel.status).toBe(201);
  return { a, b };
}

async function create(col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", `/api/v1/${col}`, body);
  expect(res.status).toBe(201);
  return res.body._id as string;
}

async function get(app: TestApp, col: string, id: string) {
  return app.admin("GET", `/api/v1/${col}/${id}?include_deleted=true`);
}

describe("one relation: existence", () => {
  test("a value naming no record is 422 rule relation on create and update", async () => {
    const { a, b } = await pair();
    const res = await t.admin("POST", `/api/v1/${b}`, { ref: "nothing-here" });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field: "ref", rule: "relation", message: `"ref" must name an existing record of "${a}".` }] });
    const target = await create(a, { x: 1 });
    const id = await create(b, { ref: target });
    const upd = await t.admin("PATCH", `/api/v1/${b}/${id}`, { ref: "missing" });
    expect(upd.status).toBe(422);
    expect(upd.body.errors[0]).toMatchObject({ field: "ref", rule: "relation" });
    expect((await t.admin("PATCH", `/api/v1/${b}/${id}`, { ref: null })).body.ref).toBeNull();
  });

  test("a soft-deleted target no longer counts as existing", async () => {
    const { a, b } = await pair();
    const target = await create(a, {});
    expect((await t.admin("DELETE", `/api/v1/${a}/${target}`)).status).toBe(200);
    const res = await t.admin("POST", `/api/v1/${b}`, { ref: target });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].rule).toBe("relation");
  });

  test("a number in a one field is 422 rule type", async () => {
    const { b } = await pair();
    const res = await t.admin("POST", `/api/v1/${b}`, { ref: 5 });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ field: "ref", rule: "type" });
  });
});

describe("on_delete restrict", () => {
  test("soft and hard delete of a target with active pointers are 409 conflict and change nothing", async () => {
    const { a, b } = await pair();
    const target = await create(a, {});
    const src = await create(b, { ref: target });
    const soft = await t.admin("DELETE", `/api/v1/${a}/${target}`);
    expect(soft.status).toBe(409);
    expect(soft.body).toEqual({ error: expect.stringContaining("restrict"), code: "conflict" });
    const hard = await t.admin("DELETE", `/api/v1/admin/collections/${a}/records/${target}`);
    expect(hard.status).toBe(409);
    expect((await get(t, a, target)).body._deleted_at).toBeNull();
    // once the pointer is soft-deleted, the target may go
    expect((await t.admin("DELETE", `/api/v1/${b}/${src}`)).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/${a}/${target}`)).status).toBe(200);
  });
});

describe("on_delete cascade", () => {
  test("soft delete cascades, and restoring the target restores only what the cascade deleted", async () => {
    const { a, b } = await pair("cascade");
    const target = await create(a, {});
    const p1 = await create(b, { ref: target });
    const p2 = await create(b, { ref: target });
    const early = await create(b, { ref: target });
    const other = await create(b, {});
    expect((await t.admin("DELETE", `/api/v1/${b}/${early}`)).status).toBe(200);
    const early1 = (await get(t, b, early)).body._deleted_at;
    t.clock.advance(1000);
    const del = await t.admin("DELETE", `/api/v1/${a}/${target}`);
    expect(del.status).toBe(200);
    expect((await get(t, b, p1)).body._deleted_at).toBe(del.body._deleted_at);
    expect((await get(t, b, p2)).body._deleted_at).toBe(del.body._deleted_at);
    expect((await get(t, b, other)).body._deleted_at).toBeNull();
    const restored = await t.admin("POST", `/api/v1/${a}/${target}/restore`);
    expect(restored.status).toBe(200);
    expect((await get(t, b, p1)).body._deleted_at).toBeNull();
    expect((await get(t, b, p2)).body._deleted_at).toBeNull();
    expect((await get(t, b, early)).body._deleted_at).toBe(early1);
  });

  test("hard delete cascades to every pointing record, soft-deleted ones too", async () => {
    const { a, b } = await pair("cascade");
    const target = await create(a, {});
    const p1 = await create(b, { ref: target });
    const p2 = await create(b, { ref: target });
    expect((await t.admin("DELETE", `/api/v1/${b}/${p2}`)).status).toBe(200);
    const res = await t.admin("DELETE", `/api/v1/admin/collections/${a}/records/${target}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, id: target });
    expect((await get(t, b, p1)).status).toBe(404);
    expect((await get(t, b, p2)).status).toBe(404);
  });

  test("a chain A→B→C cascades on soft delete, restores the whole chain, and cascades on hard delete", async () => {
    for (const name of ["chainA", "chainB", "chainC"]) await t.admin("POST", "/api/v1/admin/collections", { name });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "chainB", from_field: "a", to_col: "chainA", type: "one", on_delete: "cascade" });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "chainC", from_field: "b", to_col: "chainB", type: "one", on_delete: "cascade" });
    const a = await create("chainA", {});
    const b = await create("chainB", { a });
    const c1 = await create("chainC", { b });
    const c2 = await create("chainC", { b });
    expect((await t.admin("DELETE", `/api/v1/chainA/${a}`)).status).toBe(200);
    for (const [col, id] of [["chainB", b], ["chainC", c1], ["chainC", c2]]) expect((await get(t, col, id)).body._deleted_at).not.toBeNull();
    expect((await t.admin("POST", `/api/v1/chainA/${a}/restore`)).status).toBe(200);
    for (const [col, id] of [["chainB", b], ["chainC", c1], ["chainC", c2]]) expect((await get(t, col, id)).body._deleted_at).toBeNull();
    expect((await t.admin("DELETE", `/api/v1/admin/collections/chainA/records/${a}`)).status).toBe(200);
    for (const [col, id] of [["chainB", b], ["chainC", c1], ["chainC", c2]]) expect((await get(t, col, id)).status).toBe(404);
  });

  test("a restrict further down a cascade chain rolls the whole delete back", async () => {
    for (const name of ["rbA", "rbB", "rbC"]) await t.admin("POST", "/api/v1/admin/collections", { name });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "rbB", from_field: "a", to_col: "rbA", type: "one", on_delete: "cascade" });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "rbC", from_field: "b", to_col: "rbB", type: "one" });
    const a = await create("rbA", {});
    const b = await create("rbB", { a });
    await create("rbC", { b });
    const res = await t.admin("DELETE", `/api/v1/rbA/${a}`);
    expect(res.status).toBe(409);
    expect((await get(t, "rbA", a)).body._deleted_at).toBeNull();
    expect((await get(t, "rbB", b)).body._deleted_at).toBeNull();
  });

  test("a record that points at its own collection cascades through the tree", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "nodes" });
    await t.admin("POST", "/api/v1/admin/relations", { from_col: "nodes", from_field: "parent", to_col: "nodes", type: "one", on_delete: "cascade" });
    const root = await create("nodes", {});
    const child = await create("nodes", { parent: root });
    const grand = await create("nodes", { parent: child });
    expect((await t.admin("DELETE", `/api/v1/nodes/${root}`)).status).toBe(200);
    expect((await get(t, "nodes", grand)).body._deleted_at).not.toBeNull();
    expect((await t.admin("POST", `/api/v1/nodes/${root}/restore`)).status).toBe(200);
    expect((await get(t, "nodes", grand)).body._deleted_at).toBeNull();
  });
});

describe("on_delete set_null", () => {
  test("soft delete sets the field to null and restore leaves it null", async () => {
    const { a, b } = await pair("set_null");
    const target = await create(a, {});
    const p1 = await create(b, { ref: target, keep: "yes" });
    expect((await t.admin("DELETE", `/api/v1/${a}/${target}`)).status).toBe(200);
    const rec = (await get(t, b, p1)).body;
    expect(rec).toMatchObject({ ref: null, keep: "yes", _deleted_at: null });
    expect((await t.admin("POST", `/api/v1/${a}/${target}/restore`)).status).toBe(200);
    expect((await get(t, b, p1)).body.ref).toBeNull();
  });

  test("hard delete sets the field to null", async () => {
    const { a, b } = await pair("set_null");
    const target = await create(a, {});
    const p1 = await create(b, { ref: target });
    expect((await t.admin("DELETE", `/api/v1/admin/collections/${a}/records/${target}`)).status).toBe(200);
    expect((await get(t, b, p1)).body.ref).toBeNull();
  });
});

describe("many_via links a delete removes or a restore puts back", () => {
  test("give the pointing record a new version (ETag), so a stale If-Match is 412 and _updated_at:gt finds it", async () => {
    const p = `s${++n}`;
    for (const name of [`${p}tags`, `${p}posts`]) expect((await t.admin("POST", "/api/v1/admin/collections", { name })).status).toBe(201);
    const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: `${p}posts`, from_field: "labels", to_col: `${p}tags`, type: "many_via", on_delete: "set_null" });
    expect(rel.status).toBe(201);
    const [x, y] = [await create(`${p}tags`, { n: 1 }), await create(`${p}tags`, { n: 2 })];
    const post = await create(`${p}posts`, { labels: [x, y] });
    const before = await t.admin("GET", `/api/v1/${p}posts/${post}`);
    t.clock.advance(10);
    expect((await t.admin("DELETE", `/api/v1/${p}tags/${x}`)).status).toBe(200);
    const after = await t.admin("GET", `/api/v1/${p}posts/${post}`);
    expect(after.body.labels).toEqual([y]);
    expect(after.body._updated_at).toBeGreaterThan(before.body._updated_at);
    expect(after.headers.get("etag")).not.toBe(before.headers.get("etag"));
    const stale = await t.req("PATCH", `/api/v1/${p}posts/${post}`, { token: ADMIN_SECRET, body: { n: 1 }, headers: { "if-match": before.headers.get("etag")! } });
    expect(stale.status).toBe(412);
    const since = await t.admin("GET", `/api/v1/${p}posts?filter=${encodeURIComponent(`_updated_at:gt:${before.body._updated_at}`)}`);
    expect(since.body.items.map((r: { _id: string }) => r._id)).toEqual([post]);
  });
});
