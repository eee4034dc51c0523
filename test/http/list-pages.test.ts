import { describe, expect, test } from "bun:test";
import type { SqlValue } from "../../src/db/engine.ts";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";
import { holdNextStatement, runElsewhere } from "../helpers/engine.ts";

// A list page asked again (the same query, under the same scope) of a collection unchanged since is answered
// from memory (CONTRACT §4 leaves it open; docs/API.md "Lists"): every committed write, by this server or any
// other process on the database, and every change of what the rule sees shows in the next page.

const t = appPerTest(async (t) => {
  await createCollection(t, "notes", { read: "public", create: "public", update: "public", delete: "public" }, { fields: [{ name: "n", type: "number" }, { name: "cat", type: "text" }] });
  for (let n = 0; n < 6; n++) await t.req("POST", "/api/v1/notes", { body: { n, cat: n % 2 ? "odd" : "even" } });
});

const PAGE = "/api/v1/notes?filter=cat:eq:even&sort=-n&limit=2";

/** The `n` of each item of a page, and the page's cursor and total. */
async function page(path = PAGE, token?: string) {
  const res = await t.req("GET", path, { token });
  expect(res.status).toBe(200);
  return { ns: res.body.items.map((r: { n: number }) => r.n) as number[], next: res.body.next_cursor as string | null, total: res.body.total as number | null, items: res.body.items as { _id: string }[] };
}

/** Counts the page statements (SELECT … ORDER BY) the app runs from now on. */
function countPageReads() {
  const db = t.ctx.db;
  const all = db.all.bind(db);
  const seen = { n: 0 };
  db.all = async <T>(sql: string, params?: readonly SqlValue[]) => {
    if (sql.startsWith("SELECT") && sql.includes(" ORDER BY ")) seen.n++;
    return await all<T>(sql, params);
  };
  return seen;
}

test("a repeated page is answered from memory, byte for byte as the first time", async () => {
  const first = await t.req("GET", PAGE);
  const reads = countPageReads();
  // A few tries: on PostgreSQL the cluster's own commits (autovacuum) rightly drop what is kept.
  let same = false;
  for (let i = 0; i < 3 && !same; i++) {
    const before = reads.n;
    const again = await t.req("GET", PAGE);
    expect(again.text).toBe(first.text);
    same = reads.n === before;
  }
  expect(same).toBe(true);
  expect(first.headers.get("content-type")).toBe("application/json;charset=utf-8");
  expect(first.body).toEqual({ items: [expect.objectContaining({ n: 4, cat: "even" }), expect.objectContaining({ n: 2, cat: "even" })], next_cursor: first.body.items[1]._id, total: 3 });
});

test("the same page asked by many clients at once is read once, and each gets it", async () => {
  await t.req("POST", "/api/v1/notes", { body: { n: 7, cat: "even" } });
  const reads = countPageReads();
  // A few tries: on PostgreSQL the cluster's own commits (autovacuum) rightly start a read anew.
  let once = false;
  for (let i = 0; i < 3 && !once; i++) {
    await t.req("POST", "/api/v1/notes", { body: { n: 100 + i, cat: "odd" } });
    const before = reads.n;
    const pages = await Promise.all(Array.from({ length: 10 }, () => page()));
    for (const p of pages) expect(p).toMatchObject({ ns: [7, 4], total: 4 });
    once = reads.n - before === 1;
  }
  expect(once).toBe(true);
});

describe("every write shows in the next page", () => {
  test("create, update, soft delete, restore and hard delete", async () => {
    expect((await page()).ns).toEqual([4, 2]);
    await t.req("POST", "/api/v1/notes", { body: { n: 10, cat: "even" } });
    expect((await page()).ns).toEqual([10, 4]);
    const top = (await page()).items[0]!._id;
    expect((await t.req("PATCH", `/api/v1/notes/${top}`, { body: { n: 3 } })).status).toBe(200);
    expect((await page()).ns).toEqual([4, 3]);
    expect((await t.req("DELETE", `/api/v1/notes/${top}`)).status).toBe(200);
    expect(await page()).toMatchObject({ ns: [4, 2], total: 3 });
    expect((await t.req("POST", `/api/v1/notes/${top}/restore`)).status).toBe(200);
    expect(await page()).toMatchObject({ ns: [4, 3], total: 4 });
    expect((await t.admin("DELETE", `/api/v1/admin/collections/notes/records/${top}`)).status).toBe(200);
    expect(await page()).toMatchObject({ ns: [4, 2], total: 3 });
  });

  test("bulk and batch writes; a rolled-back batch leaves the page as it was", async () => {
    expect((await page()).ns).toEqual([4, 2]);
    expect((await t.req("POST", "/api/v1/notes/bulk", { body: [{ n: 20, cat: "even" }, { n: 21, cat: "odd" }] })).status).toBe(201);
    expect((await page()).ns).toEqual([20, 4]);
    const ops = [{ op: "create", data: { n: 30, cat: "even" } }];
    expect((await t.req("POST", "/api/v1/notes/batch", { body: { operations: ops } })).status).toBe(200);
    expect((await page()).ns).toEqual([30, 20]);
    const failing = [{ op: "create", data: { n: 40, cat: "even" } }, { op: "update", id: "no-such-record", data: { n: 1 } }];
    expect((await t.req("POST", "/api/v1/notes/batch", { body: { operations: failing } })).status).toBe(400);
    expect((await page()).ns).toEqual([30, 20]);
  });

  test("a write to another collection leaves the page; the other collection's page follows its own writes", async () => {
    await createCollection(t, "tasks", { read: "public", create: "public" }, { fields: [{ name: "n", type: "number" }] });
    expect((await page()).ns).toEqual([4, 2]);
    expect((await page("/api/v1/tasks?sort=-n")).ns).toEqual([]);
    await t.req("POST", "/api/v1/tasks", { body: { n: 1 } });
    expect((await page()).ns).toEqual([4, 2]);
    expect((await page("/api/v1/tasks?sort=-n")).ns).toEqual([1]);
  });

  test("cursor pages follow writes too", async () => {
    const first = await page();
    expect((await page(`${PAGE}&after=${first.next}`)).ns).toEqual([0]);
    await t.req("POST", "/api/v1/notes", { body: { n: 1, cat: "even" } });
    expect((await page(`${PAGE}&after=${first.next}`)).ns).toEqual([1, 0]);
  });

  test("a record soft-deleted, changed, then inserted by another process shows in the next page", async () => {
    const first = await page();
    expect(first.ns).toEqual([4, 2]);
    await runElsewhere(t, 'UPDATE "notes" SET "_deleted_at" = 1 WHERE "_id" = ?', [first.items[0]!._id]);
    expect(await page()).toMatchObject({ ns: [2, 0], total: 2 });
    await runElsewhere(t, 'UPDATE "notes" SET "n" = 7 WHERE "_id" = ?', [first.items[1]!._id]);
    expect((await page()).ns).toEqual([7, 0]);
    await runElsewhere(t, 'INSERT INTO "notes" ("_id", "_created_at", "_updated_at", "n", "cat") VALUES (?, 1, 1, ?, ?)', ["zz-other-process", 9, "even"]);
    expect(await page()).toMatchObject({ ns: [9, 7], total: 3 });
  });

  test("a page read while a write commits is answered but not kept: the next page shows the write", async () => {
    const hold = holdNextStatement(t.ctx.db, "all", (sql) => sql.includes(" ORDER BY "));
    const slow = page();
    await hold.reached;
    expect((await t.req("POST", "/api/v1/notes", { body: { n: 8, cat: "even" } })).status).toBe(201);
    // Asked after the write while the first read still runs: it does not wait for that read's older answer.
    const after = page();
    await Bun.sleep(50);
    hold.release();
    expect((await slow).ns).toEqual([4, 2]);
    expect((await after).ns).toEqual([8, 4]);
    expect((await page()).ns).toEqual([8, 4]);
    expect((await page()).ns).toEqual([8, 4]);
  });
});

describe("what the rule sees", () => {
  test("an owner rule: each user gets a page of their own records from the same URL", async () => {
    await createCollection(t, "diary", { read: "owner", create: "authenticated" }, { fields: [{ name: "n", type: "number" }] });
    const ann = (await registerUser(t, "ann@example.com")).token;
    const bob = (await registerUser(t, "bob@example.com")).token;
    await t.req("POST", "/api/v1/diary", { body: { n: 1 }, token: ann });
    await t.req("POST", "/api/v1/diary", { body: { n: 2 }, token: bob });
    for (let i = 0; i < 2; i++) {
      expect((await page("/api/v1/diary?sort=-n", ann)).ns).toEqual([1]);
      expect((await page("/api/v1/diary?sort=-n", bob)).ns).toEqual([2]);
      expect((await t.req("GET", "/api/v1/diary?sort=-n")).status).toBe(401);
    }
  });

  test("a rule on @now: the page follows the time", async () => {
    await createCollection(t, "events", { read: "starts <= @now", create: "public" }, { fields: [{ name: "starts", type: "number" }] });
    const now = Date.now();
    for (const dt of [-1000, 1000, 60_000]) await t.req("POST", "/api/v1/events", { body: { starts: now + dt } });
    const starts = async () => (await t.req("GET", "/api/v1/events?sort=starts")).body.items.map((r: { starts: number }) => r.starts - now);
    // Asked twice (the second may come from memory) before the second event starts, then after.
    expect(await starts()).toEqual([-1000]);
    expect(await starts()).toEqual([-1000]);
    await Bun.sleep(now + 1000 - Date.now() + 20);
    expect(await starts()).toEqual([-1000, 1000]);
  });

  test("a rule on another collection (@exists): a change there shows in the next page", async () => {
    await createCollection(t, "members", { read: "public", create: "public", delete: "public" }, { fields: [{ name: "room", type: "text" }, { name: "user", type: "text" }] });
    await createCollection(t, "messages", { read: "@exists(members, room = @record.room && user = @auth.id)", create: "public" }, { fields: [{ name: "room", type: "text" }, { name: "n", type: "number" }] });
    const ann = await registerUser(t, "ann@example.com");
    await t.req("POST", "/api/v1/messages", { body: { room: "a", n: 1 } });
    await t.req("POST", "/api/v1/messages", { body: { room: "b", n: 2 } });
    const mine = async () => (await page("/api/v1/messages?sort=n", ann.token)).ns;
    expect(await mine()).toEqual([]);
    const joined = (await t.req("POST", "/api/v1/members", { body: { room: "a", user: ann.id } })).body._id;
    expect(await mine()).toEqual([1]);
    await t.req("POST", "/api/v1/members", { body: { room: "b", user: ann.id } });
    expect(await mine()).toEqual([1, 2]);
    expect((await t.req("DELETE", `/api/v1/members/${joined}`)).status).toBe(200);
    expect(await mine()).toEqual([2]);
  });
});
