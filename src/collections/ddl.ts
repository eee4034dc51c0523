import { execAll, type Engine } from "../db/engine.ts";
import { q } from "../db/ident.ts";
import { NAME_RE, storedType, type FieldType } from "../catalog/types.ts";

// The schema changes of user collections, as the engine's dialect writes them (DdlDialect). Identifiers reach
// SQL only after passing NAME_RE (or being one of our own `_`-prefixed system names), and are always quoted.

/** Creates the table of a new collection with its system columns. */
export async function createCollectionTable(db: Engine, name: string): Promise<void> {
  if (!NAME_RE.test(name)) throw new Error("invalid collection name");
  await execAll(db, db.sql.ddl.createTable(name));
}

/** Adds a column for a newly seen field. */
export async function addColumn(db: Engine, table: string, field: string, type: FieldType): Promise<void> {
  await db.exec(db.sql.ddl.addColumn(table, field, storedType(type)));
}

/**
 * Drops a collection's table (its indexes go with it). Where the engine needs to know (PostgreSQL's prepared
 * statements), the drop is noted in the same transaction for every process sharing the database.
 */
export async function dropCollectionTable(db: Engine, name: string): Promise<void> {
  await execAll(db, db.sql.ddl.dropTable(name));
}

/**
 * Creates an index over fields of a collection. A plain index also carries `_deleted_at` last:
 * every default read filters on it, so counts and filters are answered from the index alone
 * (about 8x faster for a `total` over thousands of matches). A unique index keeps exactly the
 * user's fields, so uniqueness means what the user asked for.
 */
export async function createIndex(db: Engine, table: string, index: string, fields: string[], unique: boolean): Promise<void> {
  const physical = unique || fields.includes("_deleted_at") ? fields : [...fields, "_deleted_at"];
  await db.exec(db.sql.ddl.createIndex(table, index, physical, unique));
}

/** Drops an index. */
export async function dropIndex(db: Engine, index: string): Promise<void> {
  await db.exec(db.sql.ddl.dropIndex(index));
}

/** Whether any table or index of the database has that name (case-insensitive). */
export async function schemaNameTaken(db: Engine, name: string): Promise<boolean> {
  return (await db.get(db.sql.ddl.nameTaken, [db.sql.ddl.schemaName(name)])) !== null;
}

/** Creates the junction table of a many_via relation and its reverse index. */
export async function createJunctionTable(db: Engine, table: string): Promise<void> {
  await execAll(db, db.sql.ddl.createJunction(table));
}

/** Drops the junction table of a many_via relation (its index goes with it). */
export async function dropJunctionTable(db: Engine, table: string): Promise<void> {
  await db.exec(db.sql.ddl.dropJunction(table));
}

/** Opens a transaction that changes a collection's columns: call it first in the transaction (see DdlDialect.beginColumnChange). */
export async function beginColumnChange(db: Engine, table: string): Promise<void> {
  await execAll(db, db.sql.ddl.beginColumnChange(table));
}

/** Renames a column; its indexes and full-text triggers follow. */
export async function renameColumn(db: Engine, table: string, from: string, to: string): Promise<void> {
  await execAll(db, db.sql.ddl.renameColumn(table, from, to));
}

/** Drops a column (and its data); no index or trigger may name it. */
export async function dropColumn(db: Engine, table: string, field: string): Promise<void> {
  await execAll(db, db.sql.ddl.dropColumn(table, field));
}

/**
 * The non-null values of a column, `size` rows at a time in `_id` order, each page after the row `after`
 * (`""` for the first page).
 */
export async function readColumnPage(db: Engine, table: string, field: string, after: string, size: number): Promise<{ id: string; v: unknown }[]> {
  return await db.all<{ id: string; v: unknown }>(
    `SELECT "_id" AS "id", ${q(field)} AS "v" FROM ${q(table)} WHERE ${q(field)} IS NOT NULL AND "_id" > ? ORDER BY "_id" LIMIT ?`,
    [after, size],
  );
}

/**
 * Replaces the values of field `field` (of stored type `from`) by values of type `type` given in chunks: `begin`, then
 * `chunk` with `[_id, value]` pairs (values as DdlDialect.fill takes them) as often as needed, then `finish`, after
 * which the field holds the new values (null where none was given), in place or as a new column `column` that took
 * its name. Indexes and triggers naming the field must be gone first (and made again after).
 */
export function columnFill(db: Engine, table: string, field: string, fromType: FieldType, column: string, toType: FieldType) {
  const from = storedType(fromType);
  const type = storedType(toType);
  const fill = db.sql.ddl.fill;
  return {
    begin: () => execAll(db, fill.begin(table, column, type)),
    chunk: async (pairs: [string, unknown][]) => {
      if (pairs.length) await db.run(fill.chunk(table, column, type), [JSON.stringify(pairs)]);
    },
    async finish(): Promise<void> {
      await execAll(db, fill.ready(table, column, type));
      const inPlace = fill.inPlace?.(table, field, from, type);
      if (inPlace && (await castsAlike(db, inPlace.differing))) return await execAll(db, inPlace.alter);
      await execAll(db, fill.end(table, column, type));
      await dropColumn(db, table, field);
      await renameColumn(db, table, column, field);
    },
  };
}

/** Whether the engine's cast gives every value given (the check counts none differing); a cast that fails says no, and changes nothing. */
async function castsAlike(db: Engine, differing: string): Promise<boolean> {
  try {
    // A savepoint: a value the cast refuses (out of range) fails this check alone, not the transaction.
    return await db.transaction(async () => (await db.get<{ n: number | bigint }>(differing))!.n == 0);
  } catch {
    return false;
  }
}
