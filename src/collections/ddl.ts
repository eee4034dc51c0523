import type { Engine } from "../db/engine.ts";
import { pgIdentifier } from "../db/pg-placeholders.ts";
import { NAME_RE, type FieldType } from "./types.ts";

// All DDL for user collections lives here. Identifiers reach SQL only after passing NAME_RE
// (or being one of our own `_`-prefixed system names), and are always double-quoted.

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Quotes an identifier that has already been validated; throws if it was not. */
export function q(name: string): string {
  if (!IDENT_RE.test(name)) throw new Error(`refusing unsafe identifier ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/**
 * A name of ours built from a collection name (an index, say) as the engine will call it: on PostgreSQL a
 * name over 63 bytes is cut and ends in a hash of the whole (the engine shortens every quoted identifier
 * the same way; this is for names compared as values, in the schema's own tables).
 */
export function schemaIdent(db: Engine, name: string): string {
  return db.dialect === "sqlite" ? name : pgIdentifier(name);
}

// A JSON field keeps its JSON text on both engines (PostgreSQL: `text` too), so a stored value comes back
// byte for byte and filters compare the same text.
// A number column on SQLite has NUMERIC affinity: a whole number is stored (and indexed) as an integer of
// 1 to 8 bytes, any other as a float, and both compare and sort by value. Under REAL affinity an index kept
// every value as an 8-byte float: larger indexes, more pages written per transaction. Read back, both give
// the same JavaScript number; as text (LIKE) a whole number reads `731`, as on PostgreSQL. Columns made
// before keep REAL; the two behave alike but for that text.
const COLUMN_TYPE: Record<Engine["dialect"], Record<FieldType, string>> = {
  sqlite: { text: "TEXT", number: "NUMERIC", boolean: "INTEGER", json: "TEXT" },
  postgres: { text: 'TEXT COLLATE "C"', number: "DOUBLE PRECISION", boolean: "BOOLEAN", json: 'TEXT COLLATE "C"' },
};

/** Text columns compare and sort by code point on both engines (SQLite's BINARY collation). */
const TEXT: Record<Engine["dialect"], string> = { sqlite: "TEXT", postgres: 'TEXT COLLATE "C"' };

/** The integer type of times (ms) and counters. */
const INTEGER: Record<Engine["dialect"], string> = { sqlite: "INTEGER", postgres: "BIGINT" };

/** Creates the table of a new collection with its system columns. */
export async function createCollectionTable(db: Engine, name: string): Promise<void> {
  if (!NAME_RE.test(name)) throw new Error("invalid collection name");
  const int = INTEGER[db.dialect];
  const text = TEXT[db.dialect];
  await db.exec(`CREATE TABLE ${q(name)} (
    "_id" ${text} PRIMARY KEY NOT NULL,
    "_created_at" ${int} NOT NULL,
    "_updated_at" ${int} NOT NULL,
    "_owner_id" ${text},
    "_deleted_at" ${int}
  )`);
  await db.exec(`CREATE INDEX ${q(schemaIdent(db, `_idx_${name}_owner`))} ON ${q(name)} ("_owner_id", "_id")`);
}

/** Adds a column for a newly seen field. */
export async function addColumn(db: Engine, table: string, field: string, type: FieldType): Promise<void> {
  // On PostgreSQL writers add columns side by side (on other nodes too): one that waited for another's
  // lock finds the column made, and its transaction is run again (a serialization failure when it
  // writes the catalog row) with the catalog as it now is. SQLite's single writer never gets there.
  const ifMissing = db.dialect === "postgres" ? "IF NOT EXISTS " : "";
  await db.exec(`ALTER TABLE ${q(table)} ADD COLUMN ${ifMissing}${q(field)} ${COLUMN_TYPE[db.dialect][type]}`);
}

/**
 * Drops a collection's table (its indexes go with it). On PostgreSQL it also counts the drop in
 * `_meta.table_drops`, in the same transaction: every process sharing the database reads that count at
 * its next catalog check (pgChangeMarks), and stops running statements it prepared against the old table.
 */
export async function dropCollectionTable(db: Engine, name: string): Promise<void> {
  await db.exec(`DROP TABLE IF EXISTS ${q(name)}`);
  if (db.dialect === "postgres") {
    await db.run("INSERT INTO _meta (key, value) VALUES ('table_drops', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(_meta.value AS INTEGER) + 1 AS TEXT)");
  }
}

/**
 * Creates an index over fields of a collection. A plain index also carries `_deleted_at` last:
 * every default read filters on it, so counts and filters are answered from the index alone
 * (about 8x faster for a `total` over thousands of matches). A unique index keeps exactly the
 * user's fields, so uniqueness means what the user asked for.
 */
export async function createIndex(db: Engine, table: string, index: string, fields: string[], unique: boolean): Promise<void> {
  const physical = unique || fields.includes("_deleted_at") ? fields : [...fields, "_deleted_at"];
  // PostgreSQL orders nulls as SQLite does only when told (lists sort `NULLS FIRST` ascending, `NULLS LAST`
  // descending): its index must be built in that order, or a sorted page reads and sorts every match.
  const order = db.dialect === "postgres" ? " NULLS FIRST" : "";
  const cols = physical.map((f) => q(f) + order).join(", ");
  await db.exec(`CREATE ${unique ? "UNIQUE " : ""}INDEX ${q(index)} ON ${q(table)} (${cols})`);
}

/** Drops an index. */
export async function dropIndex(db: Engine, index: string): Promise<void> {
  await db.exec(`DROP INDEX IF EXISTS ${q(index)}`);
}

/** Whether any table or index of the database has that name (case-insensitive). */
export async function schemaNameTaken(db: Engine, name: string): Promise<boolean> {
  const sql =
    db.dialect === "postgres"
      ? "SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) AND lower(relname) = lower(?)"
      : "SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?)";
  return (await db.get(sql, [schemaIdent(db, name)])) !== null;
}

/** Creates the junction table of a many_via relation and its reverse index. */
export async function createJunctionTable(db: Engine, table: string): Promise<void> {
  const t = q(table);
  const rowid = db.dialect === "sqlite" ? " WITHOUT ROWID" : "";
  await db.exec(`CREATE TABLE ${t} ("from_id" ${TEXT[db.dialect]} NOT NULL, "to_id" ${TEXT[db.dialect]} NOT NULL, "pos" ${INTEGER[db.dialect]} NOT NULL, PRIMARY KEY ("from_id", "to_id"))${rowid}`);
  await db.exec(`CREATE INDEX ${q(`${table}_to`)} ON ${t} ("to_id", "from_id")`);
}

/** Drops the junction table of a many_via relation (its index goes with it). */
export async function dropJunctionTable(db: Engine, table: string): Promise<void> {
  await db.exec(`DROP TABLE IF EXISTS ${q(table)}`);
}

/**
 * A number that changes whenever another connection commits (SQLite's `data_version`, which the engine
 * always asks its writing connection, without waiting for a transaction: this process's own commits do
 * not move it): the catalog cache compares it to learn cheaply that another process (the CLI) may have
 * changed the schema, and counts kept in memory are dropped when it moves. SQLite only: see `pgChangeMarks`.
 */
export async function externalChangeCounter(db: Engine): Promise<number> {
  return (await db.get<{ data_version: number }>("PRAGMA data_version"))!.data_version;
}

/** The schema version each engine's last catalog check read (see pgChangeMarks). */
const versionSeen = new WeakMap<Engine, number>();

/**
 * PostgreSQL's counterpart of `externalChangeCounter`, in one statement: the catalog's version
 * (`_meta.schema_version`) and the text of the statement's snapshot (`pg_current_snapshot()`: the
 * oldest transaction still running, one past the newest finished, and those running between). A
 * transaction that writes gets an id, and its end changes that text; reads get none. So two equal
 * texts mean no transaction committed anywhere in between (no node, no CLI command), and any commit
 * makes every later text differ from every earlier one. When the version moved, it also gives the engine
 * the count of dropped tables (see Engine.noteTableDrops), before the request's statements touch a table.
 */
export async function pgChangeMarks(db: Engine): Promise<{ schemaVersion: number; snapshot: string }> {
  // The key is a parameter so that the driver prepares the statement once per connection: a statement
  // without parameters goes by the simple protocol, parsed and planned every time (three times the CPU).
  const row = (await db.get<{ v: string | null; s: string }>("SELECT (SELECT value FROM _meta WHERE key = ?) AS v, CAST(pg_current_snapshot() AS text) AS s", ["schema_version"]))!;
  const schemaVersion = row.v === null ? 0 : Number(row.v);
  // A collection's table is dropped only with the collection, which bumps the version in the same
  // transaction: the count is read (inside a transaction, in the same snapshot) only when the version moved.
  // A version seen inside a transaction is not noted as seen: it may be the transaction's own, rolled back
  // later, and another process's next change would then bring the same number.
  if (db.noteTableDrops && versionSeen.get(db) !== schemaVersion) {
    const drops = await db.get<{ value: string }>("SELECT value FROM _meta WHERE key = ?", ["table_drops"]);
    db.noteTableDrops(drops ? Number(drops.value) : 0);
    if (!db.inTransaction()) versionSeen.set(db, schemaVersion);
  }
  return { schemaVersion, snapshot: row.s };
}
