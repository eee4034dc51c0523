import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { is } from "drizzle-orm";
import { getTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import { migrations } from "../../migrations/index.ts";
import { migrate } from "../../src/db/migrate.ts";
import { migratePostgres } from "../../src/db/migrate-postgres.ts";
import { openPostgres, type PostgresEngine } from "../../src/db/postgres.ts";
import * as schema from "../../src/db/schema.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// The system tables are created twice, by the SQLite migrations and by the PostgreSQL ones. This keeps the
// two in agreement, table by table and column by column: SQLite's integer is bigint there, or boolean where
// the drizzle schema reads it as a boolean; text is text; COLLATE NOCASE is the case-insensitive collation.

interface Column {
  name: string;
  type: string;
  notNull: boolean;
  primaryKey: boolean;
  nocase: boolean;
}

/** Columns the drizzle schema reads as booleans ("table.column"). */
function booleanColumns(): Set<string> {
  const tables = (Object.values(schema) as unknown[]).filter((v): v is SQLiteTable => is(v, SQLiteTable));
  return new Set(
    tables.flatMap((t) => {
      const { name, columns } = getTableConfig(t);
      return columns.filter((c) => c.columnType === "SQLiteBoolean").map((c) => `${name}.${c.name}`);
    }),
  );
}

function fromSqlite(): { tables: Map<string, Column[]>; indexes: string[] } {
  const db = new Database(":memory:");
  migrate(db);
  const bools = booleanColumns();
  const tables = db
    .query<{ name: string; sql: string }, []>(
      "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE '\\_%' ESCAPE '\\' AND name != '_migrations' ORDER BY name",
    )
    .all();
  const out = new Map<string, Column[]>();
  for (const { name, sql } of tables) {
    const cols = db
      .query<{ name: string; type: string; notnull: number; pk: number }, [string]>('SELECT name, type, "notnull", pk FROM pragma_table_info(?)')
      .all(name);
    out.set(
      name,
      cols.map((c) => {
        const sqliteType = c.type.toLowerCase();
        const type = sqliteType === "integer" ? (bools.has(`${name}.${c.name}`) ? "boolean" : "bigint") : sqliteType === "real" ? "double precision" : sqliteType;
        const nocase = new RegExp("`" + c.name + "`[^,\\n]*COLLATE NOCASE").test(sql);
        return { name: c.name, type, notNull: c.notnull === 1 || c.pk > 0, primaryKey: c.pk > 0, nocase };
      }),
    );
  }
  const indexes = db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
    .all()
    .map((r) => r.name);
  db.close();
  return { tables: out, indexes };
}

async function fromPostgres(db: PostgresEngine): Promise<{ tables: Map<string, Column[]>; indexes: string[] }> {
  const cols = await db.all<{ table_name: string; column_name: string; data_type: string; is_nullable: string; collation_name: string | null }>(
    `SELECT table_name, column_name, data_type, is_nullable, collation_name FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name LIKE '\\_%' AND table_name != '_migrations' ORDER BY table_name, ordinal_position`,
  );
  const pks = await db.all<{ table_name: string; column_name: string }>(
    `SELECT k.table_name, k.column_name FROM information_schema.table_constraints t
       JOIN information_schema.key_column_usage k ON k.constraint_name = t.constraint_name AND k.table_name = t.table_name
      WHERE t.constraint_type = 'PRIMARY KEY' AND t.table_schema = 'public'`,
  );
  const pk = new Set(pks.map((r) => `${r.table_name}.${r.column_name}`));
  const out = new Map<string, Column[]>();
  for (const c of cols) {
    // PostgreSQL's stand-in for SQLite's implicit rowid (an identity column), which listings order by.
    if (c.column_name === "rowid") continue;
    const list = out.get(c.table_name) ?? [];
    list.push({
      name: c.column_name,
      type: c.data_type,
      notNull: c.is_nullable === "NO",
      primaryKey: pk.has(`${c.table_name}.${c.column_name}`),
      nocase: c.collation_name === "baas_nocase",
    });
    out.set(c.table_name, list);
  }
  // Unique constraints and primary keys are indexes of their own on PostgreSQL, automatic ones on SQLite.
  const indexes = (
    await db.all<{ indexname: string }>(
      `SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = 'public'
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname) ORDER BY i.indexname`,
    )
  ).map((r) => r.indexname);
  return { tables: out, indexes };
}

const byName = (cols: Column[]) => [...cols].sort((a, b) => a.name.localeCompare(b.name));

warnIfSkipped();

describe.skipIf(!postgresAvailable)("PostgreSQL migrations of the system tables", () => {
  let db: PostgresEngine;
  let url: string;
  const sqlite = fromSqlite();
  let pg: Awaited<ReturnType<typeof fromPostgres>>;

  beforeAll(async () => {
    url = await createTestDatabase();
    db = openPostgres({ url, poolSize: 4 });
    await migratePostgres(db);
    pg = await fromPostgres(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  test("create the same system tables as the SQLite migrations", () => {
    expect(sqlite.tables.size).toBeGreaterThan(5);
    expect([...pg.tables.keys()].sort()).toEqual([...sqlite.tables.keys()].sort());
  });

  test("create the same indexes as the SQLite migrations", () => {
    expect(pg.indexes).toEqual(sqlite.indexes);
  });

  for (const table of fromSqlite().tables.keys()) {
    test(`${table}: same columns, types, NOT NULL, primary key and case-insensitive collation`, () => {
      expect(byName(pg.tables.get(table) ?? [])).toEqual(byName(sqlite.tables.get(table)!));
    });
  }

  test("record the same migration names as SQLite, and apply nothing the second time", async () => {
    const names = (await db.all<{ name: string }>('SELECT "name" FROM "_migrations" ORDER BY "name"')).map((r) => r.name);
    expect(names).toEqual(migrations.map((m) => m.name).sort());
    expect(await migratePostgres(db)).toEqual([]);
  });

  test("two nodes migrating one new database at the same time apply each migration once", async () => {
    const fresh = await createTestDatabase();
    const a = openPostgres({ url: fresh, poolSize: 2 });
    const b = openPostgres({ url: fresh, poolSize: 2 });
    try {
      const [ra, rb] = await Promise.all([migratePostgres(a), migratePostgres(b)]);
      expect([...ra, ...rb].sort()).toEqual(migrations.map((m) => m.name).sort());
      expect(await a.get('SELECT COUNT(*) AS n FROM "_migrations"')).toEqual({ n: migrations.length });
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a test database made from the migrated template has every migration and nothing to apply", async () => {
    const copy = openPostgres({ url: await createTestDatabase({ migrated: true }), poolSize: 1 });
    try {
      expect(await migratePostgres(copy)).toEqual([]);
      expect(await copy.get('SELECT COUNT(*) AS n FROM "_users"')).toEqual({ n: 0 });
    } finally {
      await copy.close();
    }
  });

  test("collection names are unique whatever their case, as with COLLATE NOCASE", async () => {
    await db.run(`INSERT INTO "_collections" ("name", "rules", "created_at", "updated_at") VALUES (?, '{}', ?, ?)`, ["Posts", 1, 1]);
    expect(await db.get(`SELECT "name" FROM "_collections" WHERE "name" = ?`, ["posts"])).toEqual({ name: "Posts" });
    const err = await db
      .run(`INSERT INTO "_collections" ("name", "rules", "created_at", "updated_at") VALUES (?, '{}', ?, ?)`, ["POSTS", 2, 2])
      .catch((e) => e);
    expect({ status: err.status, code: err.code, fields: err.extra?.fields }).toEqual({ status: 409, code: "unique_violation", fields: ["name"] });
  });
});
