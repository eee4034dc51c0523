import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";

// `_created_at`, `_updated_at` and `_deleted_at` are integer columns (BIGINT on PostgreSQL). A filter value
// is read as a number, so a fractional, huge or infinite one is compared by value, on both engines alike:
// the same status and body, with the answer SQLite's numeric comparison gives.

const t = createTestApp();
afterAll(() => t.close());

const enc = encodeURIComponent;
/** r0..r4 are created at 1000..5000; r1 is deleted at 6000 and r3 at 7000 (`_deleted_at` of the others is null). */
const ids: string[] = [];

beforeAll(async () => {
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "items", rules: { read: "public", delete: "public" } })).status).toBe(201);
  for (let i = 0; i < 5; i++) {
    t.clock.set(1000 * (i + 1));
    const res = await t.admin("POST", "/api/v1/items", { n: i });
    expect(res.status).toBe(201);
    ids.push(res.body._id);
  }
  t.clock.set(6000);
  expect((await t.admin("DELETE", `/api/v1/items/${ids[1]}`)).status).toBe(200);
  t.clock.set(7000);
  expect((await t.admin("DELETE", `/api/v1/items/${ids[3]}`)).status).toBe(200);
});

const ALL = [0, 1, 2, 3, 4];
const NONE: number[] = [];

/** [filter, include_deleted, the records (by index) it matches]. */
const CASES: [string, boolean, number[]][] = [
  // Integer values, as before.
  ["_created_at:gt:2000", true, [2, 3, 4]],
  ["_created_at:eq:2000", true, [1]],
  // Fractional values.
  ["_created_at:gt:1.5", true, ALL],
  ["_created_at:gt:1999.5", true, [1, 2, 3, 4]],
  ["_created_at:gt:2000.5", true, [2, 3, 4]],
  ["_created_at:gte:1999.5", true, [1, 2, 3, 4]],
  ["_created_at:gte:2000.5", true, [2, 3, 4]],
  ["_created_at:lt:2000.5", true, [0, 1]],
  ["_created_at:lt:1999.5", true, [0]],
  ["_created_at:lte:2000.5", true, [0, 1]],
  ["_created_at:lte:1999.5", true, [0]],
  ["_created_at:lte:-0.5", true, NONE],
  ["_created_at:gte:-0.5", true, ALL],
  ["_created_at:eq:2000.5", true, NONE],
  ["_created_at:ne:2000.5", true, ALL],
  ["_created_at:in:1.5,2", true, NONE],
  ["_created_at:in:2000.5,3000", true, [2]],
  ["_created_at:in:2000.5,null", true, NONE],
  ["_created_at:gt:1e-400", true, ALL],
  ["_created_at:gt:2.0005e3", true, [2, 3, 4]],
  // Infinite values (one past a double's range).
  ["_created_at:gt:-1e999", true, ALL],
  ["_created_at:gte:-1e999", true, ALL],
  ["_created_at:gt:1e999", true, NONE],
  ["_created_at:gte:1e999", true, NONE],
  ["_created_at:lt:1e999", true, ALL],
  ["_created_at:lte:1e999", true, ALL],
  ["_created_at:lt:-1e999", true, NONE],
  ["_created_at:lte:-1e999", true, NONE],
  ["_created_at:eq:1e999", true, NONE],
  ["_created_at:eq:-1e999", true, NONE],
  ["_created_at:ne:1e999", true, ALL],
  ["_created_at:ne:-1e999", true, ALL],
  ["_created_at:in:1e999,-1e999", true, NONE],
  ["_created_at:in:-1e999,1000,5000", true, [0, 4]],
  // Whole numbers beyond a 64-bit integer.
  ["_created_at:gt:1e20", true, NONE],
  ["_created_at:gte:1e21", true, NONE],
  ["_created_at:lt:1e20", true, ALL],
  ["_created_at:lte:9223372036854775807", true, ALL],
  ["_created_at:gt:9223372036854775807", true, NONE],
  ["_created_at:gte:-9223372036854775808", true, ALL],
  ["_created_at:lt:-9223372036854775809", true, NONE],
  ["_created_at:gt:-9223372036854775808", true, ALL],
  ["_created_at:lte:-9223372036854775808", true, NONE],
  ["_created_at:eq:-9223372036854775808", true, NONE],
  ["_created_at:ne:-9223372036854775808", true, ALL],
  ["_created_at:lt:4611686018427387904", true, ALL],
  ["_created_at:gte:9007199254740993", true, NONE],
  ["_created_at:gt:-1e20", true, ALL],
  ["_created_at:lte:-1e20", true, NONE],
  ["_created_at:eq:1e20", true, NONE],
  ["_created_at:ne:-1e20", true, ALL],
  ["_created_at:in:1e20,1000", true, [0]],
  // Without include_deleted, r1 and r3 are hidden whatever the filter.
  ["_created_at:gt:1999.5", false, [2, 4]],
  ["_created_at:lt:1e999", false, [0, 2, 4]],
  ["_created_at:ne:-1e999", false, [0, 2, 4]],
  // `_updated_at`: `_created_at`, but 6000 and 7000 for r1 and r3 (a delete sets it).
  ["_updated_at:lte:1e999", true, ALL],
  ["_updated_at:gt:2500.5", true, [1, 2, 3, 4]],
  ["_updated_at:lt:3000.5", true, [0, 2]],
  ["_updated_at:in:3000.5,4000", true, NONE],
  ["_updated_at:in:3000.5,7000", true, [3]],
  ["_updated_at:gt:5500.5", true, [1, 3]],
  // `_deleted_at`, null on live records: comparisons never match a null, `ne` and `in … null` do.
  ["_deleted_at:gt:6000", true, [3]],
  ["_deleted_at:ne:6000", true, [0, 2, 3, 4]],
  ["_deleted_at:gt:6000.5", true, [3]],
  ["_deleted_at:gte:5999.5", true, [1, 3]],
  ["_deleted_at:gte:6000.5", true, [3]],
  ["_deleted_at:lt:6999.5", true, [1]],
  ["_deleted_at:lt:7000.5", true, [1, 3]],
  ["_deleted_at:lte:7000.5", true, [1, 3]],
  ["_deleted_at:lte:6999.5", true, [1]],
  ["_deleted_at:eq:6000.5", true, NONE],
  ["_deleted_at:ne:6000.5", true, ALL],
  ["_deleted_at:in:6000.5,7000", true, [3]],
  ["_deleted_at:in:6000.5,null", true, [0, 2, 4]],
  ["_deleted_at:in:6000.5,1e999", true, NONE],
  ["_deleted_at:gt:-1e999", true, [1, 3]],
  ["_deleted_at:gte:-1e999", true, [1, 3]],
  ["_deleted_at:gt:1e999", true, NONE],
  ["_deleted_at:lt:1e999", true, [1, 3]],
  ["_deleted_at:lte:1e999", true, [1, 3]],
  ["_deleted_at:lt:-1e999", true, NONE],
  ["_deleted_at:eq:1e999", true, NONE],
  ["_deleted_at:ne:1e999", true, ALL],
  ["_deleted_at:ne:-1e999", true, ALL],
  ["_deleted_at:in:1e999,null", true, [0, 2, 4]],
  ["_deleted_at:gt:1e20", true, NONE],
  ["_deleted_at:lt:1e20", true, [1, 3]],
  ["_deleted_at:gte:-1e20", true, [1, 3]],
  ["_deleted_at:lte:-1e20", true, NONE],
  ["_deleted_at:eq:-1e20", true, NONE],
  ["_deleted_at:ne:1e20", true, ALL],
  ["_deleted_at:ne:1.5", false, [0, 2, 4]],
  ["_deleted_at:lt:1e999", false, NONE],
  ["_deleted_at:in:1.5,null", false, [0, 2, 4]],
];

function query(filter: string, includeDeleted: boolean): string {
  return `filter=${enc(filter)}${includeDeleted ? "&include_deleted=true" : ""}`;
}

describe("filters on the integer system fields compare any number by value", () => {
  for (const [filter, includeDeleted, want] of CASES) {
    test(`${filter}${includeDeleted ? " (include_deleted)" : ""} lists and counts records ${want.join(", ") || "none"}`, async () => {
      const list = await t.req("GET", `/api/v1/items?${query(filter, includeDeleted)}`);
      expect({ status: list.status, ids: list.body.items?.map((r: { _id: string }) => r._id), total: list.body.total, next: list.body.next_cursor }).toEqual({
        status: 200,
        ids: want.map((i) => ids[i]),
        total: want.length,
        next: null,
      });
      const count = await t.req("GET", `/api/v1/items/count?${query(filter, includeDeleted)}`);
      expect({ status: count.status, body: count.body }).toEqual({ status: 200, body: { total: want.length } });
    });
  }

  test("a fractional filter pages by cursor over a sort on the same field", async () => {
    const q = `${query("_created_at:lt:4000.5", true)}&sort=-_created_at&limit=2`;
    const first = await t.req("GET", `/api/v1/items?${q}`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[3], ids[2]]);
    expect(first.body.total).toBe(4);
    const second = await t.req("GET", `/api/v1/items?${q}&after=${first.body.next_cursor}`);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ total: null, next_cursor: null });
    expect(second.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[1], ids[0]]);
  });

  test("a cursor over a sort on _deleted_at with an infinite bound keeps null-first order", async () => {
    const q = `${query("_deleted_at:ne:1e999", true)}&sort=_deleted_at&limit=3`;
    const first = await t.req("GET", `/api/v1/items?${q}`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[0], ids[2], ids[4]]);
    const second = await t.req("GET", `/api/v1/items?${q}&after=${first.body.next_cursor}`);
    expect(second.status).toBe(200);
    expect(second.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[1], ids[3]]);
    expect(second.body.next_cursor).toBeNull();
  });

  test("aggregates take the same filters", async () => {
    const res = await t.req("GET", `/api/v1/items/aggregate?fn=sum&field=n&${query("_created_at:gt:2999.5", true)}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { value: 2 + 3 + 4 } });
  });

  test("a value that is not a number is still refused", async () => {
    const res = await t.req("GET", `/api/v1/items?${query("_created_at:gt:abc", true)}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
  });
});

// A boolean is stored as 1 or 0 on SQLite (BOOLEAN on PostgreSQL): `1`/`0` filter values and `like`, which
// reads the stored value as text, answer alike on both engines.
describe("filters on a boolean field answer alike on both engines", () => {
  const flags: string[] = [];
  beforeAll(async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "flags", rules: { read: "public" } })).status).toBe(201);
    for (const flag of [true, false, null, true]) {
      const res = await t.admin("POST", "/api/v1/flags", { flag });
      expect(res.status).toBe(201);
      flags.push(res.body._id);
    }
  });

  const cases: [string, number[]][] = [
    ["flag:eq:1", [0, 3]],
    ["flag:eq:0", [1]],
    ["flag:ne:1", [1, 2]],
    ["flag:gt:0", [0, 3]],
    ["flag:lte:0", [1]],
    ["flag:in:0,1", [0, 1, 3]],
    ["flag:in:1,null", [0, 2, 3]],
    ["flag:like:1", [0, 3]],
    ["flag:like:0", [1]],
    ["flag:like:%", [0, 1, 3]],
    ["flag:like:true", []],
    ["flag:like:t", []],
  ];
  for (const [filter, want] of cases) {
    test(`${filter} lists records ${want.join(", ") || "none"}`, async () => {
      const res = await t.req("GET", `/api/v1/flags?filter=${enc(filter)}`);
      expect({ status: res.status, ids: res.body.items?.map((r: { _id: string }) => r._id), total: res.body.total }).toEqual({
        status: 200,
        ids: want.map((i) => flags[i]),
        total: want.length,
      });
    });
  }

  test("a number other than 1 or 0 is refused", async () => {
    for (const filter of ["flag:gt:0.5", "flag:eq:2", "flag:lt:1e999"]) {
      const res = await t.req("GET", `/api/v1/flags?filter=${enc(filter)}`);
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: "bad_request" });
    }
  });
});
