import { renderCond, type ElementKind, type Spelling } from "./condition.ts";
import type { Dialect, FtsDialect, SearchToken, StoredType } from "./dialect.ts";
import { q } from "./ident.ts";

// SQLite's spelling of what Dialect names.

/** The json_each types of the elements an `element` condition of each kind compares. */
const ELEMENT_TYPES: Record<ElementKind, string> = { text: "= 'text'", number: "IN ('integer', 'real')", boolean: "IN ('true', 'false')" };

const spelling: Spelling = {
  distinct: "IS NOT",
  // LIKE ignores ASCII case, reads any value as text and has no escape character unless told.
  like: (column) => `${column} LIKE ?`,
  oneOf: "IN (SELECT value FROM json_each(?))",
  // json_each reads a scalar as one element: only an array counts. A boolean element reads as 1 or 0, as a boolean
  // column holds it. The alias is one no collection can take (see reservedAlias).
  element(array, value, kind, differs) {
    const test = `pg_el.type ${ELEMENT_TYPES[kind]} AND pg_el.value = ${value}`;
    return `EXISTS (SELECT 1 FROM json_each(${array}) AS pg_el WHERE json_type(${array}) = 'array' AND ${differs ? `NOT coalesce(${test}, 0)` : test})`;
  },
};

// A JSON field keeps its JSON text, so a stored value comes back byte for byte and filters compare the same text.
// A number column has NUMERIC affinity: a whole number is stored (and indexed) as an integer of 1 to 8 bytes, any
// other as a float, and both compare and sort by value. Under REAL affinity an index kept every value as an 8-byte
// float: larger indexes, more pages written per transaction. Read back, both give the same JavaScript number; as
// text (LIKE) a whole number reads `731`, as on PostgreSQL. Columns made before keep REAL; the two behave alike
// but for that text.
const COLUMN_TYPE: Record<StoredType, string> = { text: "TEXT", number: "NUMERIC", boolean: "INTEGER", json: "TEXT" };

// Full-text search: one FTS5 table `_fts_<name>` whose rowid is the record row's rowid (always named `_rowid_`,
// which no user field can shadow) and whose one column holds every text field joined by spaces. Triggers on the
// collection table keep it current for every write path (single, bulk, batch, cascades, the CLI): insert adds,
// update re-indexes, hard delete removes. It starts empty and the rows that already existed are added in steps
// (FtsSteps, run by search/fts.ts), so a large collection never stops the server. A new text field only needs the
// triggers made again, since old rows hold null there.

/** The FTS5 table of a collection. Collection names start with a letter, so no user table can clash. */
const ftsTable = (name: string) => `_fts_${name}`;

const TRIGGERS = ["ai", "au", "ad"] as const;

/** The indexed text of a row: its text fields joined by spaces; `prefix` is "new." in triggers. */
function bodyExpr(prefix: "new." | "", fields: readonly string[]): string {
  if (!fields.length) return "''";
  return fields.map((f) => `coalesce(${prefix}${q(f)}, '')`).join(" || ' ' || ");
}

const dropTriggers = (name: string) => TRIGGERS.map((t) => `DROP TRIGGER IF EXISTS ${q(`${ftsTable(name)}_${t}`)}`);

/** The triggers that keep the index of `name` current for these text fields (made again). */
function createTriggers(name: string, fields: readonly string[]): string[] {
  const t = q(name);
  const f = q(ftsTable(name));
  const body = bodyExpr("new.", fields);
  const watched = fields.length ? fields.map(q).join(", ") : q("_id");
  return [
    ...dropTriggers(name),
    `CREATE TRIGGER ${q(`${ftsTable(name)}_ai`)} AFTER INSERT ON ${t} BEGIN
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`,
    `CREATE TRIGGER ${q(`${ftsTable(name)}_au`)} AFTER UPDATE OF ${watched} ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`,
    `CREATE TRIGGER ${q(`${ftsTable(name)}_ad`)} AFTER DELETE ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
  END`,
  ];
}

const dropFts = (name: string) => [...dropTriggers(name), `DROP TABLE IF EXISTS ${q(ftsTable(name))}`];

const BAREWORD_RE = /^[\p{L}\p{N}_]+$/u;

/**
 * A user's search terms as an FTS5 query. Words, `prefix*`, "quoted phrases", AND, OR, NOT and parentheses keep
 * their meaning; any other punctuation is quoted, so a word like `e-mail` or `title:x` is searched as text instead
 * of read as FTS5 syntax. Structural mistakes (a dangling operator) end as 400 when FTS5 parses it (queryError).
 */
export function toMatchQuery(tokens: readonly SearchToken[]): string {
  return tokens
    .map((t) => {
      if (t.kind !== "term") return t.text;
      const star = t.prefix ? "*" : "";
      return (t.quoted || !BAREWORD_RE.test(t.raw) ? `"${t.raw}"` : t.raw) + star;
    })
    .join(" ");
}

const fts: FtsDialect = {
  create: (name, fields) => [
    ...dropFts(name),
    `CREATE VIRTUAL TABLE ${q(ftsTable(name))} USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')`,
    ...createTriggers(name, fields),
  ],
  drop: dropFts,
  // The triggers go with the table; the FTS5 table does not (and an interrupted change may have left one).
  dropBesideTable: dropFts,
  refields: createTriggers,
  // The index holds the same text; the triggers name the columns, and are made again under the new names.
  renamed: createTriggers,
  indexedCount(name) {
    const t = q(name);
    const f = q(ftsTable(name));
    return `SELECT COUNT(*) AS n FROM ${f} JOIN ${t} ON ${t}._rowid_ = ${f}.rowid WHERE ${t}."_deleted_at" IS NULL`;
  },
  // The FTS5 table joined on the row id, `MATCH`, and FTS5's `rank` (BM25, lower is better).
  search(name, tokens) {
    const table = q(name);
    const f = q(ftsTable(name));
    return {
      from: { sql: `${table} JOIN ${f} ON ${f}.rowid = ${table}._rowid_`, params: [] },
      match: { k: "raw", sql: `${f} MATCH ?`, params: [toMatchQuery(tokens)] },
      rank: `${f}.rank`,
      rankDesc: false,
    };
  },
  queryError(err) {
    if (!(err instanceof Error) || !/fts5|unknown special query|no such column/i.test(err.message)) return null;
    return err.message.replace(/^fts5: /, "");
  },
  steps: {
    extent: (name) => `SELECT max(_rowid_) AS last, count(*) AS total FROM ${q(name)}`,
    next: (name) => `SELECT max(r) AS upto, count(*) AS n FROM (SELECT _rowid_ AS r FROM ${q(name)} WHERE _rowid_ > ? AND _rowid_ <= ? ORDER BY _rowid_ LIMIT ?)`,
    // INSERT OR REPLACE: a row the triggers indexed meanwhile is harmless.
    fill: (name, fields) => `INSERT OR REPLACE INTO ${q(ftsTable(name))} (rowid, body) SELECT _rowid_, ${bodyExpr("", fields)} FROM ${q(name)} WHERE _rowid_ > ? AND _rowid_ <= ?`,
  },
};

export const sqliteDialect: Dialect = {
  cond: (c, params) => renderCond(c, params, spelling),
  order: (expr, desc) => `${expr} ${desc ? "DESC" : "ASC"}`,
  aggregate(fn, expr) {
    if (fn === "count") return expr ? `COUNT(${expr})` : "COUNT(*)";
    // SUM of integers fails past 2^63 (NUMERIC columns hold whole numbers as integers); TOTAL adds as floats, as
    // PostgreSQL's SUM of double precision does, and is 0 over no row.
    if (fn === "sum") return `TOTAL(${expr})`;
    return `${fn.toUpperCase()}(${expr})`;
  },
  escapedLike: (column) => `${column} LIKE ? ESCAPE '\\'`,
  inList: spelling.oneOf,
  textRows: (alias) => `json_each(?) AS ${alias}`,
  // Correlated subqueries: beside a session or key row they cost two index lookups, where a JOIN measured twice the
  // time (5 to 10 times a lookup in an earlier measure). `email` is null only when there is no such user (NOT NULL).
  userAccess: (userId) => ({
    columns: ["roles", "metadata", "email", "is_verified"].map((c) => `(SELECT ${c} FROM _users WHERE id = ${userId}) AS ${c}`).join(", "),
    join: "",
  }),
  insertOrder: "rowid",
  // One writer at a time: a claim's SELECT and UPDATE run as one, and no other writer can take the same rows.
  skipLocked: "",
  ddl: {
    schemaName: (name) => name,
    createTable: (name) => [
      `CREATE TABLE ${q(name)} (
    "_id" TEXT PRIMARY KEY NOT NULL,
    "_created_at" INTEGER NOT NULL,
    "_updated_at" INTEGER NOT NULL,
    "_owner_id" TEXT,
    "_deleted_at" INTEGER
  )`,
      `CREATE INDEX ${q(`_idx_${name}_owner`)} ON ${q(name)} ("_owner_id", "_id")`,
    ],
    addColumn: (table, field, type) => `ALTER TABLE ${q(table)} ADD COLUMN ${q(field)} ${COLUMN_TYPE[type]}`,
    dropTable: (name) => [`DROP TABLE IF EXISTS ${q(name)}`],
    createIndex: (table, index, columns, unique) => `CREATE ${unique ? "UNIQUE " : ""}INDEX ${q(index)} ON ${q(table)} (${columns.map(q).join(", ")})`,
    dropIndex: (index) => `DROP INDEX IF EXISTS ${q(index)}`,
    // The transaction holds the only write lock from its BEGIN IMMEDIATE; readers go on reading what was committed.
    beginColumnChange: () => [],
    renameColumn: (table, from, to) => [`ALTER TABLE ${q(table)} RENAME COLUMN ${q(from)} TO ${q(to)}`],
    dropColumn: (table, field) => [`ALTER TABLE ${q(table)} DROP COLUMN ${q(field)}`],
    // The new column added first; each chunk's values set at once: a scan of the pairs, each row found by its key
    // (json_extract gives a JSON string as text, a number as an integer or real, true and false as 1 and 0).
    fill: {
      begin: (table, column, type) => [`ALTER TABLE ${q(table)} ADD COLUMN ${q(column)} ${COLUMN_TYPE[type]}`],
      chunk: (table, column) =>
        `UPDATE ${q(table)} SET ${q(column)} = json_extract("j".value, '$[1]') FROM json_each(?) AS "j" WHERE ${q(table)}."_id" = json_extract("j".value, '$[0]')`,
      ready: () => [],
      end: () => [],
    },
    nameTaken: "SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?)",
    createJunction: (table) => [
      `CREATE TABLE ${q(table)} ("from_id" TEXT NOT NULL, "to_id" TEXT NOT NULL, "pos" INTEGER NOT NULL, PRIMARY KEY ("from_id", "to_id")) WITHOUT ROWID`,
      `CREATE INDEX ${q(`${table}_to`)} ON ${q(table)} ("to_id", "from_id")`,
    ],
    dropJunction: (table) => `DROP TABLE IF EXISTS ${q(table)}`,
  },
  fts,
};
