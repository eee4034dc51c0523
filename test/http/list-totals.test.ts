import { describe, expect, test } from "bun:test";
import type { SqlValue } from "../../src/db/engine.ts";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";
import { runElsewhere } from "../helpers/engine.ts";

// `total` on a list (CONTRACT §4): `total=false` skips the count; a repeated count of the same filter
// is answered from memory, and any committed write to the collection (by this server, or by another
// process on the same database) shows in the next total.

const t = appPerTest(async (t) => {
  await createCollection(t, "notes", { read: "public", create: "public", update: "public", delete: "public" });
  for (let i = 0; i < 6; i++) await t.req("POST", "/api/v1/notes", { body: { cat: i % 2 ? "odd" : "even", n: i } });
});

const EVEN = "/api/v1/notes?filter=cat:eq:even&limit=2";
const total = async (path = EVEN) => {
  const res = await t.req("GET", path);
  expect(res.status).toBe(200);
  return res.body.total as number | null;
};
const evenIds = async () => (await t.req("GET", "/api/v1/notes?filter=cat:eq:even&limit=50")).body.items.map((r: { _id: string }) => r._id) as string[];

const writeElsewhere = (sql: string, params: SqlValue[] = []) => runElsewhere(t, sql, params);

describe("total=false", () => {
  test("skips the count in offset mode: total is null, items and next_cursor are as without it", async () => {
    const counted = await t.req("GET", EVEN);
    const res = await t.req("GET", `${EVEN}&total=false`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...counted.body, total: null });
    expect(counted.body.total).toBe(3);
    expect(res.body.next_cursor).not.toBeNull();
  });

  test("total=true, total=1 and an empty total count as without it; total=0 skips", async () => {
    expect(await total(`${EVEN}&total=true`)).toBe(3);
    expect(await total(`${EVEN}&total=1`)).toBe(3);
    expect(await total(`${EVEN}&total=`)).toBe(3);
    expect(await total(`${EVEN}&total=0`)).toBeNull();
  });

  test("any other value is 400 bad_request", async () => {
    for (const v of ["maybe", "no", "2", "FALSE"]) {
      const res = await t.req("GET", `${EVEN}&total=${v}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "total must be true or false", code: "bad_request" });
    }
  });
});

describe("repeated totals follow every write", () => {
  test("create, update, soft delete, restore and hard delete each show in the next total", async () => {
    expect(await total()).toBe(3);
    expect(await total()).toBe(3);
    const made = await t.req("POST", "/api/v1/notes", { body: { cat: "even", n: 10 } });
    expect(await total()).toBe(4);
    await t.req("PATCH", `/api/v1/notes/${made.body._id}`, { body: { cat: "odd" } });
    expect(await total()).toBe(3);
    expect(await total("/api/v1/notes?filter=cat:eq:odd")).toBe(4);
    const [first] = await evenIds();
    await t.req("DELETE", `/api/v1/notes/${first}`);
    expect(await total()).toBe(2);
    expect(await total(`${EVEN}&include_deleted=true`)).toBe(3);
    await t.req("POST", `/api/v1/notes/${first}/restore`);
    expect(await total()).toBe(3);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/notes/records/${first}`)).status).toBe(200);
    expect(await total()).toBe(2);
    expect(await total(`${EVEN}&include_deleted=true`)).toBe(2);
  });

  test("bulk and batch writes show in the next total, and GET /count agrees", async () => {
    expect(await total()).toBe(3);
    expect((await t.req("GET", "/api/v1/notes/count?filter=cat:eq:even")).body).toEqual({ total: 3 });
    expect((await t.req("POST", "/api/v1/notes/bulk", { body: [{ cat: "even" }, { cat: "even" }] })).status).toBe(201);
    expect(await total()).toBe(5);
    expect((await t.req("GET", "/api/v1/notes/count?filter=cat:eq:even")).body).toEqual({ total: 5 });
    const [a] = await evenIds();
    const batch = await t.req("POST", "/api/v1/notes/batch", {
      body: { operations: [{ op: "create", data: { cat: "even" } }, { op: "delete", id: a }, { op: "create", data: { cat: "odd" } }] },
    });
    expect(batch.status).toBe(200);
    expect(await total()).toBe(5);
    expect(await total("/api/v1/notes?filter=cat:eq:odd")).toBe(4);
  });

  test("a rolled-back batch leaves the total as it was", async () => {
    expect(await total()).toBe(3);
    const res = await t.req("POST", "/api/v1/notes/batch", {
      body: { operations: [{ op: "create", data: { cat: "even" } }, { op: "delete", id: "no-such-record" }] },
    });
    expect(res.status).toBe(400);
    expect(await total()).toBe(3);
  });

  test("a write to another collection leaves the total right, and the other collection's total follows it", async () => {
    await createCollection(t, "others", { read: "public", create: "public" });
    expect(await total()).toBe(3);
    expect(await total("/api/v1/others")).toBe(0);
    await t.req("POST", "/api/v1/others", { body: { cat: "even" } });
    expect(await total()).toBe(3);
    expect(await total("/api/v1/others")).toBe(1);
  });

  test("with an owner read rule each user gets the total of their own records", async () => {
    await createCollection(t, "mine", { read: "owner", create: "authenticated" });
    const ann = await registerUser(t, "ann@example.com");
    const bob = await registerUser(t, "bob@example.com");
    for (let i = 0; i < 3; i++) await t.req("POST", "/api/v1/mine", { token: ann.token, body: { i } });
    await t.req("POST", "/api/v1/mine", { token: bob.token, body: { i: 9 } });
    const of = async (token: string) => (await t.req("GET", "/api/v1/mine", { token })).body.total;
    expect(await of(ann.token)).toBe(3);
    expect(await of(bob.token)).toBe(1);
    expect(await of(ann.token)).toBe(3);
    await t.req("POST", "/api/v1/mine", { token: bob.token, body: { i: 10 } });
    expect(await of(bob.token)).toBe(2);
    expect(await of(ann.token)).toBe(3);
  });
});

describe("each filter keeps its own total", () => {
  test("values beyond a double's range, positive or negative, are told apart: n:gt:1e999 matches none, n:gt:-1e999 every record", async () => {
    const count = async (filter: string) => (await t.req("GET", `/api/v1/notes/count?filter=${encodeURIComponent(filter)}`)).body;
    expect(await count("n:gt:1e999")).toEqual({ total: 0 });
    expect(await count("n:gt:-1e999")).toEqual({ total: 6 });
    expect(await total("/api/v1/notes?filter=n:gt:-1e999")).toBe(6);
    expect(await total("/api/v1/notes?filter=n:lt:1e999")).toBe(6);
    expect(await total("/api/v1/notes?filter=n:lt:-1e999")).toBe(0);
    expect(await count("n:in:1e999,4")).toEqual({ total: 1 });
    expect(await count("n:in:-1e999,4")).toEqual({ total: 1 });
    expect(await count("n:gt:1e999")).toEqual({ total: 0 });
  });
});

describe("writes by another process", () => {
  test("a record soft-deleted, then inserted, by another process shows in the next total", async () => {
    expect(await total()).toBe(3);
    const [first] = await evenIds();
    await writeElsewhere('UPDATE "notes" SET "_deleted_at" = 1 WHERE "_id" = ?', [first!]);
    expect(await total()).toBe(2);
    expect(await total()).toBe(2);
    await writeElsewhere('INSERT INTO "notes" ("_id", "_created_at", "_updated_at", "cat") VALUES (?, 1, 1, ?)', ["zz-other-process", "even"]);
    expect(await total()).toBe(3);
    expect((await t.req("GET", "/api/v1/notes/count?filter=cat:eq:even")).body).toEqual({ total: 3 });
  });

  test("every record deleted by another process: the next total is 0", async () => {
    expect(await total()).toBe(3);
    await writeElsewhere('DELETE FROM "notes"');
    expect(await total()).toBe(0);
    expect(await total("/api/v1/notes")).toBe(0);
  });
});

describe("filters that look at another collection", () => {
  test("a total filtered on a many relation follows writes to the collection that points back", async () => {
    await createCollection(t, "authors", { read: "public", create: "public" });
    await createCollection(t, "posts", { read: "public", create: "public", update: "public" });
    const rel = (body: Record<string, unknown>) => t.admin("POST", "/api/v1/admin/relations", body);
    expect((await rel({ from_col: "posts", from_field: "author", to_col: "authors", type: "one" })).status).toBe(201);
    expect((await rel({ from_col: "authors", from_field: "posts", to_col: "posts", type: "many" })).status).toBe(201);
    const ann = (await t.req("POST", "/api/v1/authors", { body: { name: "Ann" } })).body._id;
    const bob = (await t.req("POST", "/api/v1/authors", { body: { name: "Bob" } })).body._id;
    const post = (await t.req("POST", "/api/v1/posts", { body: { author: ann } })).body._id;
    const writers = () => total("/api/v1/authors?filter=posts:ne:null");
    expect(await writers()).toBe(1);
    expect(await writers()).toBe(1);
    await t.req("POST", "/api/v1/posts", { body: { author: bob } });
    expect(await writers()).toBe(2);
    await t.req("PATCH", `/api/v1/posts/${post}`, { body: { author: null } });
    expect(await writers()).toBe(1);
  });
});
