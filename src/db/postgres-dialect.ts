import { fitsInt64, renderCond, type Bound, type CompareOp, type ElementKind, type Spelling } from "./condition.ts";
import type { Dialect, FtsDialect, StoredType } from "./dialect.ts";
import { q } from "./ident.ts";
import { FTS_CONFIG, toTsQuery, tsvectorExpr } from "./pg-fts.ts";
import { pgIdentifier } from "./pg-placeholders.ts";

// PostgreSQL's spelling of what Dialect names: SQLite's behaviour, written so PostgreSQL gives the same answers.

/**
 * `column op v` on a 64-bit integer column, for a number `v` no such column holds (a fraction, a whole number
 * past the range, ±Infinity), as SQLite's comparison by value answers it: the same comparison with a whole
 * bound (`> 1.5` is `> 1`, `>= 1.5` is `>= 2`), or every non-null row, or none. PostgreSQL refuses such a
 * value as a BIGINT parameter; casting the column instead would keep its index from serving the filter.
 * Equal to it is no row; distinct from it, every row (a null too).
 */
function integerCompare(column: string, op: CompareOp | "distinct", v: number, params: Bound[]): string {
  if (op === "=") return "FALSE";
  if (op === "distinct") return "TRUE";
  const bound = op === ">" || op === "<=" ? Math.floor(v) : Math.ceil(v);
  if (fitsInt64(bound)) {
    params.push(bound);
    return `${column} ${op} ?`;
  }
  // Past the range (or infinite): a lower bound above it, or an upper bound below it, admits no row.
  const lower = op === ">" || op === ">=";
  return (lower ? bound > 0 : bound < 0) ? "FALSE" : `${column} IS NOT NULL`;
}

/** The type an `element` condition's value is read as, for each kind. */
const ELEMENT_CASTS: Record<ElementKind, string> = { text: "text", number: "double precision", boolean: "boolean" };

/**
 * A `listParam` as jsonb. jsonb refuses the escape `\u0000`, and text stores NUL as the engine's escape pair
 * (postgres.ts encodeText: U+E000 U+E002; a U+E000 of the value's own is encoded by the driver already), so the
 * escape becomes that pair: a value holding NUL compares as its stored form, where it was an error (400).
 */
const JSON_LIST = "CAST(replace(CAST(? AS text), '\\u0000', '\\ue000\\ue002') AS jsonb)";

const spelling: Spelling = {
  distinct: "IS DISTINCT FROM",
  // ILIKE needs text: of a boolean the 1 or 0 SQLite stores (PostgreSQL's own text of it is true or false).
  // SQLite's LIKE has no escape character: ESCAPE '' makes a backslash an ordinary character here too.
  like(column, type) {
    const text = type === "text" ? column : type === "boolean" ? `CAST(CAST(${column} AS INTEGER) AS TEXT)` : `CAST(${column} AS TEXT)`;
    return `${text} ILIKE ? ESCAPE ''`;
  },
  oneOf: `IN (SELECT jsonb_array_elements_text(${JSON_LIST}))`,
  // CASE, not AND: PostgreSQL may evaluate AND's terms in any order, and jsonb_array_elements refuses a scalar. jsonb
  // compares numbers by value, as SQLite does.
  element(array, value, kind, differs) {
    const doc = `CAST(${array} AS jsonb)`;
    const test = `pg_el.v = to_jsonb(CAST(${value} AS ${ELEMENT_CASTS[kind]}))`;
    return `CASE WHEN jsonb_typeof(${doc}) = 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(${doc}) AS pg_el(v) WHERE ${differs ? `NOT coalesce(${test}, FALSE)` : test}) ELSE FALSE END`;
  },
  integerCompare,
};

// A JSON field keeps its JSON text (`text`, as SQLite), so a stored value comes back byte for byte. Text columns
// compare and sort by code point, as SQLite's BINARY collation does.
const TEXT = 'TEXT COLLATE "C"';

/**
 * Counts, in `_meta.table_drops` (in the change's own transaction), a change after which a statement prepared
 * against the table may be wrong: a table dropped, a column dropped or renamed (a later column of that name may
 * have another type). Every process sharing the database reads the count at its next catalog check
 * (PostgresEngine.changeMarks) and prepares its statements on the table afresh; this process does so as it runs
 * this statement.
 */
const COUNT_TABLE_CHANGE = "INSERT INTO _meta (key, value) VALUES ('table_drops', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(_meta.value AS INTEGER) + 1 AS TEXT)";
/** The temporary table of a column's fill (DdlDialect.fill): it starts with `_`, which no collection can. */
const FILL_TABLE = '"_fill_values"';
/**
 * A cast of a value of stored type `from` to `to` that gives, for most values, what collections/convert.ts makes of
 * them; DdlDialect.fill's `inPlace` checks that it does for every value before it is used. null where none does.
 */
function castExpr(value: string, from: StoredType, to: StoredType): string | null {
  const pair = `${from}>${to}`;
  switch (pair) {
    case "text>number":
      return `CAST(${value} AS double precision)`;
    case "text>boolean":
      return `CAST(${value} AS boolean)`;
    case "text>json":
      return `CAST(to_jsonb(${value}) AS text)`;
    case "number>text":
    case "number>json":
      return `CAST(${value} AS text)`;
    case "number>boolean":
      return `(${value} <> 0)`;
    case "boolean>text":
    case "boolean>json":
      // No ELSE: a NULL stays NULL (it is neither true nor false).
      return `CASE WHEN ${value} THEN 'true' WHEN NOT ${value} THEN 'false' END`;
    case "boolean>number":
      return `CASE WHEN ${value} THEN 1 WHEN NOT ${value} THEN 0 END`;
    default:
      return null;
  }
}
const CAST_TO: Record<StoredType, string> = { text: "text", number: "double precision", boolean: "boolean", json: "text" };
const COLUMN_TYPE: Record<StoredType, string> = { text: TEXT, number: "DOUBLE PRECISION", boolean: "BOOLEAN", json: TEXT };

// Full-text search: a generated column `_fts` of the collection table (a `tsvector` of its text fields,
// FTS_CONFIG: every word stemmed, none dropped) with a GIN index. PostgreSQL fills it for every row when the column is added and
// keeps it current on every write, so the index is complete at once. A new text field makes the column again
// (its expression names the fields).

/** The generated column: it starts with `_`, which no user field can, and no read names it. */
const FTS_COLUMN = "_fts";

const dropColumn = (name: string) => [`ALTER TABLE IF EXISTS ${q(name)} DROP COLUMN IF EXISTS ${q(FTS_COLUMN)}`];

/** (Re)creates the generated column over these text fields and its GIN index (which goes with the column). */
const createColumn = (name: string, fields: readonly string[]) => [
  ...dropColumn(name),
  `ALTER TABLE ${q(name)} ADD COLUMN ${q(FTS_COLUMN)} tsvector GENERATED ALWAYS AS (${tsvectorExpr(fields)}) STORED`,
  // `_fts_<name>`: no collection or user index can be called so (their names start with a letter).
  `CREATE INDEX ${q(pgIdentifier(`_fts_${name}`))} ON ${q(name)} USING gin (${q(FTS_COLUMN)})`,
];

const fts: FtsDialect = {
  // An admin's request that computes every row: a large collection may take longer than the statement
  // timeout (DB_STATEMENT_TIMEOUT_MS), which is lifted for this transaction only.
  create: (name, fields) => ["SET LOCAL statement_timeout = 0", ...createColumn(name, fields)],
  drop: dropColumn,
  // The column and its index go with the table.
  dropBesideTable: () => [],
  refields: createColumn,
  // The generated column's expression follows a renamed column by itself.
  renamed: () => [],
  // Every row has its generated vector: the index holds every record.
  indexedCount: (name) => `SELECT COUNT(*) AS n FROM ${q(name)} WHERE "_deleted_at" IS NULL`,
  // The query computed once in a one-row subquery that the planner folds into the condition on the GIN-indexed
  // column, and `ts_rank` (higher is better). Its ties (a term named as often in both texts) go to the shorter
  // text, as SQLite's BM25 orders them: a term far below the step between two ranks (a real, 7 digits) adds
  // less the more words the text has.
  search(name, tokens) {
    const table = q(name);
    const vector = `${table}.${q(FTS_COLUMN)}`;
    return {
      from: { sql: `${table} CROSS JOIN (SELECT to_tsquery('${FTS_CONFIG}', ?) AS "q") AS "_search"`, params: [toTsQuery(tokens)] },
      match: { k: "raw", sql: `${vector} @@ "_search"."q"`, params: [] },
      rank: `(CAST(ts_rank(${vector}, "_search"."q") AS float8) + 1e-12 / (1 + length(${vector})))`,
      rankDesc: true,
    };
  },
  // toTsQuery writes only valid queries: this is a safety net.
  queryError: (err) => (err instanceof Error && /syntax error in tsquery/i.test(err.message) ? err.message : null),
};

export const postgresDialect: Dialect = {
  cond: (c, params) => renderCond(c, params, spelling),
  // Told SQLite's order of nulls (first ascending, last descending): cursors rely on it.
  order: (expr, desc) => `${expr} ${desc ? "DESC NULLS LAST" : "ASC NULLS FIRST"}`,
  aggregate(fn, expr, type) {
    if (fn === "count") return expr ? `COUNT(${expr})` : "COUNT(*)";
    // Sums and averages in numeric (no overflow), read back as a number: a sum past a double's range is Infinity
    // (null in JSON) as SQLite's TOTAL gives it, not an error. Each double goes through its text (the shortest that
    // reads back as it): a cast of float8 to numeric straight would keep only 15 significant digits.
    if (fn === "sum") return `COALESCE(SUM(CAST(CAST(${expr} AS text) AS numeric)), 0)`;
    if (fn === "avg") return `AVG(CAST(CAST(${expr} AS text) AS numeric))`;
    // No min or max of booleans: they are compared as 0 and 1, which SQLite stores.
    if (type === "boolean") return `${fn.toUpperCase()}(CAST(${expr} AS INTEGER))`;
    return `${fn.toUpperCase()}(${expr})`;
  },
  // Its lower case, compared by code point.
  escapedLike: (column) => `lower(${column}) COLLATE "C" LIKE ? ESCAPE '\\'`,
  inList: spelling.oneOf,
  textRows: (alias) => `jsonb_array_elements_text(${JSON_LIST}) AS ${alias}(value)`,
  // One LEFT JOIN: four correlated subplans (one index scan each) measured 1.6 times the join's CPU per session check.
  userAccess: (userId) => ({ columns: "u.roles, u.metadata, u.email, u.is_verified", join: `LEFT JOIN _users u ON u.id = ${userId}` }),
  // An identity column of that name in the system tables listed this way (SQLite's implicit rowid).
  insertOrder: "rowid",
  skipLocked: " FOR UPDATE SKIP LOCKED",
  ddl: {
    // A name over 63 bytes is cut and ends in a hash of the whole (the engine shortens every quoted identifier the same way).
    schemaName: pgIdentifier,
    createTable: (name) => [
      `CREATE TABLE ${q(name)} (
    "_id" ${TEXT} PRIMARY KEY NOT NULL,
    "_created_at" BIGINT NOT NULL,
    "_updated_at" BIGINT NOT NULL,
    "_owner_id" ${TEXT},
    "_deleted_at" BIGINT
  )`,
      `CREATE INDEX ${q(pgIdentifier(`_idx_${name}_owner`))} ON ${q(name)} ("_owner_id", "_id")`,
    ],
    // Writers add columns side by side (on other nodes too): one that waited for another's lock finds the column
    // made, and its transaction is run again (a serialization failure when it writes the catalog row) with the
    // catalog as it now is.
    addColumn: (table, field, type) => `ALTER TABLE ${q(table)} ADD COLUMN IF NOT EXISTS ${q(field)} ${COLUMN_TYPE[type]}`,
    // The drop is counted in `_meta.table_drops`, in the same transaction: every process sharing the database reads
    // that count at its next catalog check (PostgresEngine.changeMarks), and stops running statements it prepared
    // against the old table.
    dropTable: (name) => [`DROP TABLE IF EXISTS ${q(name)}`, COUNT_TABLE_CHANGE],
    // Nulls in SQLite's order (lists sort `NULLS FIRST` ascending, `NULLS LAST` descending): the index must be built
    // in that order, or a sorted page reads and sorts every match.
    createIndex: (table, index, columns, unique) =>
      `CREATE ${unique ? "UNIQUE " : ""}INDEX ${q(index)} ON ${q(table)} (${columns.map((c) => `${q(c)} NULLS FIRST`).join(", ")})`,
    dropIndex: (index) => `DROP INDEX IF EXISTS ${q(index)}`,
    // The lock first, so the transaction's snapshot (taken at its first read) sees every write committed before,
    // and no write can come between that and the change (which would fail the change at its end). Reads of the
    // table wait too: a column's change rewrites the table under this lock anyway. Then no statement timeout.
    beginColumnChange: (table) => [`LOCK TABLE ${q(table)} IN ACCESS EXCLUSIVE MODE`, "SET LOCAL statement_timeout = 0"],
    // Counted first: this process prepares afresh before the change is sent (see PostgresEngine.exec).
    renameColumn: (table, from, to) => [COUNT_TABLE_CHANGE, `ALTER TABLE ${q(table)} RENAME COLUMN ${q(from)} TO ${q(to)}`],
    dropColumn: (table, field) => [COUNT_TABLE_CHANGE, `ALTER TABLE ${q(table)} DROP COLUMN ${q(field)}`],
    // The values gathered in a temporary table. Then, where a cast of the old values gives exactly them (checked by
    // a join), the column's type changes in place: one rewrite of the table, its indexes rebuilt. Else the new
    // column is set by one join (an UPDATE joined per chunk would read the whole table for every chunk). Each JSON
    // text is read by the new type's own input function (a number's shortest text reads back the same double).
    fill: {
      begin: () => [`CREATE TEMP TABLE IF NOT EXISTS ${FILL_TABLE} ("id" ${TEXT} NOT NULL, "v" text) ON COMMIT DROP`, `TRUNCATE ${FILL_TABLE}`],
      chunk: () => `INSERT INTO ${FILL_TABLE} ("id", "v") SELECT "e"->>0, "e"->>1 FROM jsonb_array_elements(CAST(CAST(? AS text) AS jsonb)) AS "e"`,
      ready: () => [`ANALYZE ${FILL_TABLE}`],
      end: (table, column, type) => [
        `ALTER TABLE ${q(table)} ADD COLUMN ${q(column)} ${COLUMN_TYPE[type]}`,
        `UPDATE ${q(table)} SET ${q(column)} = CAST("s"."v" AS ${CAST_TO[type]}) FROM ${FILL_TABLE} AS "s" WHERE ${q(table)}."_id" = "s"."id"`,
        `TRUNCATE ${FILL_TABLE}`,
      ],
      inPlace(table, field, from, to) {
        const expr = castExpr(`${q(table)}.${q(field)}`, from, to);
        if (!expr) return null;
        return {
          differing: `SELECT COUNT(*) AS "n" FROM ${q(table)} LEFT JOIN ${FILL_TABLE} AS "s" ON "s"."id" = ${q(table)}."_id" WHERE ${q(table)}.${q(field)} IS NOT NULL AND (${expr}) IS DISTINCT FROM CAST("s"."v" AS ${CAST_TO[to]})`,
          alter: [
            COUNT_TABLE_CHANGE,
            `ALTER TABLE ${q(table)} ALTER COLUMN ${q(field)} TYPE ${COLUMN_TYPE[to]} USING ${castExpr(q(field), from, to)}`,
            `TRUNCATE ${FILL_TABLE}`,
          ],
        };
      },
    },
    nameTaken: "SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) AND lower(relname) = lower(?)",
    createJunction: (table) => [
      `CREATE TABLE ${q(table)} ("from_id" ${TEXT} NOT NULL, "to_id" ${TEXT} NOT NULL, "pos" BIGINT NOT NULL, PRIMARY KEY ("from_id", "to_id"))`,
      `CREATE INDEX ${q(`${table}_to`)} ON ${q(table)} ("to_id", "from_id")`,
    ],
    dropJunction: (table) => `DROP TABLE IF EXISTS ${q(table)}`,
  },
  fts,
};
