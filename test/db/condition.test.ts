import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, col, exists, FALSE, or, TRUE, val, type Bound, type Cond } from "../../src/db/condition.ts";
import type { Engine } from "../../src/db/engine.ts";
import { openDatabase } from "../../src/db/open.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { postgresDialect } from "../../src/db/postgres-dialect.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { sqliteDialect } from "../../src/db/sqlite-dialect.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// The neutral form of a condition (src/db/condition.ts), as each engine's dialect spells it: the same tree
// selects the same rows on SQLite and on PostgreSQL, and renders to fixed statement text (prepared statements
// are found again by their text).

warnIfSkipped();

const T = '"items"';
const id = col(T, "_id", "text");
const s = col(T, "s", "text");
const n = col(T, "n", "number");
const b = col(T, "b", "boolean");
const j = col(T, "j", "json");
const made = col(T, "_created_at", "integer");

/** Rows of `items`: id, text, number, boolean, JSON text, created. */
const ROWS: [string, string | null, number | null, boolean | null, string | null, number][] = [
  ["r1", "Apple", 1, true, '["a","b"]', 1],
  ["r2", "pineapple", 2.5, false, '["x"]', 2],
  ["r3", "banana", null, null, '"a"', 3],
  ["r4", null, -3, true, "[1,2]", 4],
  ["r5", "a_b\\c", 10, false, null, 5],
];

/** Conditions and the ids of the rows each selects, whatever the engine. */
const CASES: [string, Cond, string[]][] = [
  ["equal text (case counts)", { k: "cmp", op: "=", a: s, b: val("apple") }, []],
  ["greater number", { k: "cmp", op: ">", a: n, b: val(1) }, ["r2", "r5"]],
  ["boolean as 1", { k: "cmp", op: "=", a: b, b: val(1) }, ["r1", "r4"]],
  ["distinct keeps nulls", { k: "distinct", a: n, b: val(1) }, ["r2", "r3", "r4", "r5"]],
  ["is null", { k: "null", a: s, not: false }, ["r4"]],
  ["is not null", { k: "null", a: n, not: true }, ["r1", "r2", "r4", "r5"]],
  ["like ignores ASCII case", { k: "like", a: s, pattern: "%APPLE%" }, ["r1", "r2"]],
  ["like: _ is any one character, a backslash an ordinary one", { k: "like", a: s, pattern: "a_b\\c" }, ["r5"]],
  ["like on a number reads its text", { k: "like", a: n, pattern: "2.5" }, ["r2"]],
  ["like on a boolean reads 1 or 0", { k: "like", a: b, pattern: "1" }, ["r1", "r4"]],
  ["in", { k: "in", a: n, values: [1, 10, 99] }, ["r1", "r5"]],
  ["in nothing", { k: "in", a: n, values: [] }, []],
  ["one of (one parameter)", { k: "oneOf", a: id, values: ["r2", "r3", "zz"] }, ["r2", "r3"]],
  ["or, with a false term", or([{ k: "cmp", op: "<", a: n, b: val(0) }, FALSE, { k: "null", a: j, not: false }]), ["r4", "r5"]],
  ["and, nested", and([and([{ k: "null", a: s, not: true }, TRUE]), { k: "cmp", op: "<=", a: n, b: val(2.5) }]), ["r1", "r2"]],
  ["not", { k: "not", c: { k: "cmp", op: "=", a: b, b: val(1) } }, ["r2", "r5"]],
  ["exists, correlated", exists("tags", "t", and([{ k: "cmp", op: "=", a: col("t", "item", "text"), b: id }, { k: "cmp", op: "=", a: col("t", "tag", "text"), b: val("red") }])), ["r1", "r3"]],
  ["not exists", { k: "not", c: exists("tags", "t", { k: "cmp", op: "=", a: col("t", "item", "text"), b: id }) }, ["r4", "r5"]],
  ["an element of a JSON array is a string (not a scalar, not a number)", { k: "element", array: j, value: val("a"), kind: "text", differs: false }, ["r1"]],
  ["no element is that string", { k: "element", array: j, value: val("1"), kind: "text", differs: false }, []],
  ["an element is that number", { k: "element", array: j, value: val(1), kind: "number", differs: false }, ["r4"]],
  ["an element differs from a string (elements of another kind too)", { k: "element", array: j, value: val("a"), kind: "text", differs: true }, ["r1", "r2", "r4"]],
  ["an element differs from null: the array has an element", { k: "element", array: j, value: val(null), kind: "text", differs: true }, ["r1", "r2", "r4"]],
  ["no element equals null", { k: "element", array: j, value: val(null), kind: "number", differs: false }, []],
  ["no element is a boolean", { k: "element", array: j, value: val(1), kind: "boolean", differs: false }, []],
  ["an integer column against a fraction", { k: "cmp", op: ">", a: made, b: val(2.5) }, ["r3", "r4", "r5"]],
  ["an integer column at least a fraction", { k: "cmp", op: ">=", a: made, b: val(2.5) }, ["r3", "r4", "r5"]],
  ["an integer column equal to a fraction", { k: "cmp", op: "=", a: made, b: val(2.5) }, []],
  ["an integer column distinct from a fraction", { k: "distinct", a: made, b: val(2.5) }, ["r1", "r2", "r3", "r4", "r5"]],
  ["an integer column below a number past its range", { k: "cmp", op: "<", a: made, b: val(1e300) }, ["r1", "r2", "r3", "r4", "r5"]],
  ["an integer column in fractions and whole numbers", { k: "in", a: made, values: [1.5, 2] }, ["r2"]],
];

async function fill(db: Engine): Promise<void> {
  for (const sql of db.sql.ddl.createTable("items")) await db.exec(sql);
  await db.exec(db.sql.ddl.addColumn("items", "s", "text"));
  await db.exec(db.sql.ddl.addColumn("items", "n", "number"));
  await db.exec(db.sql.ddl.addColumn("items", "b", "boolean"));
  await db.exec(db.sql.ddl.addColumn("items", "j", "json"));
  await db.exec(`CREATE TABLE "tags" ("item" TEXT NOT NULL, "tag" TEXT NOT NULL)`);
  for (const [rid, sv, nv, bv, jv, created] of ROWS)
    await db.run(`INSERT INTO "items" ("_id", "_created_at", "_updated_at", "s", "n", "b", "j") VALUES (?, ?, ?, ?, ?, ?, ?)`, [rid, created, created, sv, nv, bv, jv]);
  for (const [item, tag] of [["r1", "red"], ["r1", "blue"], ["r2", "blue"], ["r3", "red"]])
    await db.run(`INSERT INTO "tags" ("item", "tag") VALUES (?, ?)`, [item, tag]);
}

async function selected(db: Engine, cond: Cond): Promise<string[]> {
  const params: Bound[] = [];
  const where = db.sql.cond(cond, params);
  return (await db.all<{ _id: string }>(`SELECT "_id" FROM ${T} WHERE ${where} ORDER BY "_id"`, params)).map((r) => r._id);
}

const engines: { name: string; available: boolean; open: () => Promise<Engine> }[] = [
  { name: "sqlite", available: true, open: async () => new SqliteEngine(openDatabase(":memory:")) },
  { name: "postgres", available: postgresAvailable, open: async () => openPostgres({ url: await createTestDatabase(), poolSize: 2 }) },
];

for (const engine of engines) {
  describe.skipIf(!engine.available)(`conditions on ${engine.name}`, () => {
    let db: Engine;
    // Bounded generously: the first PostgreSQL test of a process starts the test cluster.
    beforeAll(async () => {
      db = await engine.open();
      await fill(db);
    }, 60_000);
    afterAll(async () => {
      await db?.close();
    });
    for (const [name, cond, ids] of CASES) {
      test(name, async () => {
        expect(await selected(db, cond)).toEqual(ids);
      });
    }
  });
}

describe("statement text", () => {
  const render = (dialect: typeof sqliteDialect, cond: Cond) => {
    const params: Bound[] = [];
    return { sql: dialect.cond(cond, params), params };
  };

  test("a filter of list reads as it always did, on each engine", () => {
    const cond = and([
      { k: "null", a: col(T, "_deleted_at", "integer"), not: false },
      { k: "distinct", a: s, b: val("x") },
      or([{ k: "in", a: n, values: [1, 2] }, { k: "null", a: n, not: false }]),
      { k: "like", a: b, pattern: "%1%" },
    ]);
    expect(render(sqliteDialect, cond)).toEqual({
      sql: `"items"."_deleted_at" IS NULL AND "items"."s" IS NOT ? AND ("items"."n" IN (?, ?) OR "items"."n" IS NULL) AND "items"."b" LIKE ?`,
      params: ["x", 1, 2, "%1%"],
    });
    expect(render(postgresDialect, cond)).toEqual({
      sql: `"items"."_deleted_at" IS NULL AND "items"."s" IS DISTINCT FROM ? AND ("items"."n" IN (?, ?) OR "items"."n" IS NULL) AND CAST(CAST("items"."b" AS INTEGER) AS TEXT) ILIKE ? ESCAPE ''`,
      params: ["x", 1, 2, "%1%"],
    });
  });

  test("a relation filter is one correlated EXISTS, its values in order", () => {
    const linking = and([{ k: "cmp", op: "=", a: col("r", "post", "text"), b: id }, { k: "null", a: col("r", "_deleted_at", "integer"), not: false }]);
    const cond = or([exists("comments", "r", and([linking, { k: "in", a: col("r", "_id", "text"), values: ["a", "b"] }])), { k: "not", c: exists("comments", "r", linking) }]);
    expect(render(sqliteDialect, cond)).toEqual({
      sql: `(EXISTS (SELECT 1 FROM "comments" AS r WHERE r."post" = "items"."_id" AND r."_deleted_at" IS NULL AND r."_id" IN (?, ?)) OR NOT EXISTS (SELECT 1 FROM "comments" AS r WHERE r."post" = "items"."_id" AND r."_deleted_at" IS NULL))`,
      params: ["a", "b"],
    });
  });

  test("a LIKE with backslash escapes on a system table's text column", () => {
    expect(sqliteDialect.escapedLike("email")).toBe("email LIKE ? ESCAPE '\\'");
    expect(postgresDialect.escapedLike("email")).toBe(`lower(email) COLLATE "C" LIKE ? ESCAPE '\\'`);
  });

  test("an alias that is not a short name is refused", () => {
    expect(() => exists("comments", 'r" OR 1=1 --', TRUE)).toThrow();
  });
});
