import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { runElsewhere } from "../helpers/engine.ts";

// An anonymous read by id of a `public` collection is kept between reads (its JSON text and ETag), so a
// repeated read neither queries nor serialises. Every change that could alter the answer must show in the
// very next read: a write of the record or of another record of the collection, a soft delete, a restore, a
// hard delete, a rule change, a new field, and a commit made by another process or node.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

async function app() {
  const t = createTestApp();
  apps.push(t);
  await createCollection(t, "kept", { read: "public", create: "public", update: "public", delete: "public" });
  return t;
}

// The fast path answers a bare anonymous GET; the same with a query parameter takes the route (never kept).
const read = (t: TestApp, id: string) => t.req("GET", `/api/v1/kept/${id}`);
const routed = (t: TestApp, id: string) => t.req("GET", `/api/v1/kept/${id}?include_deleted=false`);

async function sameAsRoute(t: TestApp, id: string) {
  const [a, b] = [await read(t, id), await routed(t, id)];
  expect({ status: a.status, body: a.body, etag: a.headers.get("etag") }).toEqual({ status: b.status, body: b.body, etag: b.headers.get("etag") });
  return a;
}

test("a kept record follows its updates, soft delete, restore and hard delete", async () => {
  const t = await app();
  const rec = (await t.req("POST", "/api/v1/kept", { body: { title: "one", n: 1 } })).body;
  const first = await sameAsRoute(t, rec._id);
  expect(first.body.title).toBe("one");
  expect((await read(t, rec._id)).body).toEqual(first.body); // kept: the same answer

  const patched = (await t.req("PATCH", `/api/v1/kept/${rec._id}`, { body: { title: "two" } })).body;
  const second = await sameAsRoute(t, rec._id);
  expect(second.body).toEqual(patched);
  expect(second.headers.get("etag")).not.toBe(first.headers.get("etag"));

  expect((await t.req("DELETE", `/api/v1/kept/${rec._id}`)).status).toBe(200);
  expect((await sameAsRoute(t, rec._id)).status).toBe(404);
  expect((await t.req("POST", `/api/v1/kept/${rec._id}/restore`)).status).toBe(200);
  expect((await sameAsRoute(t, rec._id)).body.title).toBe("two");
  expect((await t.req("DELETE", `/api/v1/kept/${rec._id}?hard=true`)).status).toBe(200);
  expect((await sameAsRoute(t, rec._id)).status).toBe(404);
});

test("a kept record follows a rule change and a new field of its collection", async () => {
  const t = await app();
  const rec = (await t.req("POST", "/api/v1/kept", { body: { title: "one" } })).body;
  expect((await read(t, rec._id)).status).toBe(200);
  // A new field: every record now carries it.
  expect((await t.req("POST", "/api/v1/kept", { body: { title: "x", extra: 5 } })).status).toBe(201);
  expect(Object.hasOwn((await sameAsRoute(t, rec._id)).body, "extra")).toBe(true);
  // Read rule no longer public: the anonymous caller is refused, not answered from what was kept.
  expect((await t.admin("PUT", "/api/v1/admin/collections/kept/rules", { rules: { read: "authenticated" } })).status).toBe(200);
  expect((await sameAsRoute(t, rec._id)).status).toBe(401);
  const user = await registerUser(t, "kept@example.com");
  expect((await t.req("GET", `/api/v1/kept/${rec._id}`, { token: user.token })).status).toBe(200);
});

test("a kept record follows a commit made by another process (SQLite) or another node (PostgreSQL)", async () => {
  const t = await app();
  const rec = (await t.req("POST", "/api/v1/kept", { body: { title: "one" } })).body;
  expect((await read(t, rec._id)).body.title).toBe("one");
  expect((await read(t, rec._id)).body.title).toBe("one");
  await runElsewhere(t, `UPDATE "kept" SET "title" = 'elsewhere' WHERE "_id" = ?`, [rec._id]);
  expect((await sameAsRoute(t, rec._id)).body.title).toBe("elsewhere");
});

test("a change of one record shows in the next read of another kept record of the collection", async () => {
  const t = await app();
  const a = (await t.req("POST", "/api/v1/kept", { body: { title: "a" } })).body;
  const b = (await t.req("POST", "/api/v1/kept", { body: { title: "b" } })).body;
  expect((await read(t, a._id)).status).toBe(200);
  expect((await read(t, b._id)).status).toBe(200);
  await t.req("PATCH", `/api/v1/kept/${b._id}`, { body: { title: "b2" } });
  expect((await sameAsRoute(t, a._id)).body.title).toBe("a");
  expect((await sameAsRoute(t, b._id)).body.title).toBe("b2");
});
