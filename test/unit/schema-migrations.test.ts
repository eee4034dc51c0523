import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { migrate } from "../../src/db/migrate.ts";
import * as schema from "../../src/db/schema.ts";

// The system tables are described twice: by the SQL migrations (what the database has) and by the drizzle
// schema (what the code queries). This keeps the two in agreement, table by table and column by column.

interface Column {
  name: string;
  type: string;
  notNull: boolean;
  primaryKey: boolean;
}

function fromMigrations(): Map<string, Column[]> {
  const db = new Database(":memory:");
  migrate(db);
  const tables = db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '\\_%' ESCAPE '\\' AND name != '_migrations' ORDER BY name")
    .all();
  const out = new Map<string, Column[]>();
  for (const { name } of tables) {
    const cols = db
      .query<{ name: string; type: string; notnull: number; pk: number }, [string]>("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)")
      .all(name);
    out.set(
      name,
      cols.map((c) => ({ name: c.name, type: c.type.toLowerCase(), notNull: c.notnull === 1 || c.pk > 0, primaryKey: c.pk > 0 })),
    );
  }
  db.close();
  return out;
}

function fromSchema(): Map<string, Column[]> {
  const out = new Map<string, Column[]>();
  for (const value of Object.values(schema)) {
    if (!value || typeof value !== "object") continue;
    let config: ReturnType<typeof getTableConfig>;
    try {
      config = getTableConfig(value as SQLiteTable);
    } catch {
      continue;
    }
    if (!config.name) continue;
    const composite = new Set(config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)));
    out.set(
      config.name,
      config.columns.map((c) => ({
        name: c.name,
        type: c.getSQLType().toLowerCase(),
        notNull: c.notNull || c.primary || composite.has(c.name),
        primaryKey: c.primary || composite.has(c.name),
      })),
    );
  }
  return out;
}

const byName = (cols: Column[]) => [...cols].sort((a, b) => a.name.localeCompare(b.name));

describe("drizzle schema and SQL migrations", () => {
  const migrated = fromMigrations();
  const declared = fromSchema();

  test("describe the same system tables", () => {
    expect(declared.size).toBeGreaterThan(5);
    expect([...declared.keys()].sort()).toEqual([...migrated.keys()].sort());
  });

  for (const [table, cols] of declared) {
    test(`${table}: same columns, types, NOT NULL and primary key`, () => {
      expect(migrated.has(table)).toBe(true);
      expect(byName(cols)).toEqual(byName(migrated.get(table)!));
    });
  }
});
