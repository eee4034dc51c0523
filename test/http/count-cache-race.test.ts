import { expect, test } from "bun:test";
import type { SqlValue } from "../../src/db/engine.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { holdNextStatement } from "../helpers/engine.ts";

// A total kept in memory must never outlive a write it does not count: a count that was running when a
// write of this server committed is answered, but not kept (CONTRACT §4, both engines).

const t = appPerTest(async (t) => {
  await createCollection(t, "notes", { read: "public", create: "public" });
  for (let i = 0; i < 3; i++) await t.req("POST", "/api/v1/notes", { body: { cat: "even" } });
});

const LIST = "/api/v1/notes?filter=cat:eq:even&limit=2";
const total = async () => {
  const res = await t.req("GET", LIST);
  expect(res.status).toBe(200);
  return res.body.total as number;
};

/** Holds the answer of the next COUNT(*) statement (already counted) until `release` is called. */
const holdNextCount = () => holdNextStatement(t.ctx.db, "get", (sql) => sql.startsWith("SELECT COUNT(*)"));

test("a count that was running when a write committed is not kept: the next total counts the write", async () => {
  const hold = holdNextCount();
  const slow = total();
  await hold.reached;
  expect((await t.req("POST", "/api/v1/notes", { body: { cat: "even" } })).status).toBe(201);
  hold.release();
  expect(await slow).toBe(3);
  expect(await total()).toBe(4);
  expect(await total()).toBe(4);
});

test("a count made after a write is kept and answers the next totals", async () => {
  expect((await t.req("POST", "/api/v1/notes", { body: { cat: "even" } })).status).toBe(201);
  let counts = 0;
  const db = t.ctx.db;
  const get = db.get.bind(db);
  db.get = async <T>(sql: string, params?: readonly SqlValue[]) => {
    if (sql.startsWith("SELECT COUNT(*)")) counts++;
    return get<T>(sql, params);
  };
  // On PostgreSQL any commit in the cluster (its autovacuum too) drops the counts: a few tries.
  let kept = false;
  for (let attempt = 0; attempt < 3 && !kept; attempt++) {
    expect(await total()).toBe(4);
    const before = counts;
    expect(await total()).toBe(4);
    kept = counts === before;
  }
  expect(kept).toBe(true);
});
