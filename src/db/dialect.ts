import type { Bound, ColumnType, Cond, Fragment } from "./condition.ts";

// What differs between the engines' SQL, behind one object each engine exposes (Engine.sql): code above
// src/db says what it means (a condition, an index, a full-text search) and the dialect writes it. Every
// method is pure: it returns text (and bound values); running it is the caller's, through the engine.

/** The stored type of a user field (collections/types.ts FieldType). */
export type StoredType = "text" | "number" | "boolean" | "json";

export type AggregateFn = "count" | "sum" | "avg" | "min" | "max";

/** One term of a user's search text (search/syntax.ts reads it; each engine writes its own query from the terms). */
export type SearchToken =
  | {
      kind: "term";
      /** The term as typed, without a trailing `*`: a phrase's text between its quotes, or a word. */
      raw: string;
      /** True for a "quoted phrase". */
      quoted: boolean;
      /** True when a `*` follows: a prefix query. */
      prefix: boolean;
      /** Its words as the index sees them: runs of letters and digits. */
      words: string[];
      /** As typed, for error messages. */
      text: string;
    }
  | { kind: "AND" | "OR" | "NOT" | "(" | ")"; text: string };

export interface Dialect {
  /** Renders a condition: the SQL text with `?` placeholders; its values are appended to `params`, in order. */
  cond(c: Cond, params: Bound[]): string;
  /** An ORDER BY term: `expr` ascending or descending, nulls where SQLite puts them (first ascending, last descending). */
  order(expr: string, desc: boolean): string;
  /** `fn` over the column `expr` of type `type` (null: every row, for count): `sum` of nothing is 0; min and max of booleans compare 0 and 1. */
  aggregate(fn: AggregateFn, expr: string | null, type: ColumnType | null): string;
  /**
   * A text column of a system table matches one parameter, a lower-case LIKE pattern whose backslash escapes `%`,
   * `_` and itself, ignoring ASCII case (also on a column whose collation ignores case, which PostgreSQL's LIKE refuses).
   */
  escapedLike(column: string): string;
  /** What follows a text expression for "is one of the values" with one parameter, `listParam(values)`. */
  readonly inList: string;
  /**
   * A FROM item: the table `alias` of one text column `value`, a row per value of one parameter, `listParam(values)`
   * (a set of values a statement is asked about at once, e.g. the users a realtime event may go to).
   */
  textRows(alias: string): string;
  /**
   * How a statement reads a user's access columns (roles, metadata, email, is_verified: UserAccessRow) beside a row of
   * another table, for the user whose id is the SQL expression `userId`: the select list, and what joins the user
   * (empty where the list reads them itself). The session check runs this on every request.
   */
  userAccess(userId: string): { columns: string; join: string };
  /** The column that orders the rows of a system table by insertion, as a last tie-break (`rowid`). */
  readonly insertOrder: string;
  /**
   * What ends a SELECT of rows a worker is about to claim, so that workers of other processes claiming at the same
   * time skip them instead of waiting (PostgreSQL `FOR UPDATE SKIP LOCKED`; nothing where one writer at a time runs).
   */
  readonly skipLocked: string;
  readonly ddl: DdlDialect;
  readonly fts: FtsDialect;
}

/** The schema of user collections: tables, columns, indexes, many_via junction tables. Names arrive validated. */
export interface DdlDialect {
  /** The name a schema object of ours gets in the database, for names compared as values (PostgreSQL shortens long ones). */
  schemaName(name: string): string;
  /** A collection's table with its system columns, and its owner index. */
  createTable(name: string): string[];
  /** A column for a new field. Where writers may add it side by side (PostgreSQL), one that finds it there does nothing. */
  addColumn(table: string, field: string, type: StoredType): string;
  /** Drops a collection's table (its indexes go with it), and notes the drop where prepared statements must learn of it. */
  dropTable(name: string): string[];
  /** An index over these columns, in this order, nulls sorted as lists sort them. */
  createIndex(table: string, index: string, columns: readonly string[], unique: boolean): string;
  dropIndex(index: string): string;
  /**
   * What opens a transaction that changes a collection's columns (rename, retype, drop), run before any other
   * statement of it: where readers and writers run side by side (PostgreSQL), the table's lock, taken before the
   * transaction's snapshot, and no statement timeout for the conversion of a large table.
   */
  beginColumnChange(table: string): string[];
  /** Renames a column (indexes and triggers follow), and notes it where prepared statements must learn of it. */
  renameColumn(table: string, from: string, to: string): string[];
  /** Drops a column that no index or trigger names, and notes it where prepared statements must learn of it. */
  dropColumn(table: string, field: string): string[];
  /**
   * How a field's values are replaced by converted ones (a change of type), in chunks: `begin` once, then `chunk`
   * (one parameter: a JSON array of `[_id, value]` pairs, each value the JSON of the new value, a json field's as
   * its JSON text) per chunk, then `ready`; then the new values go in the field's place: by `inPlace` where the
   * engine has it and its check finds no difference, else `end` fills the new column and it replaces the old.
   * Each takes time linear in the rows.
   */
  readonly fill: ColumnFill;
  /** Whether a table or index of that name (as schemaName gives it) exists, case-insensitive: one parameter, the name. */
  readonly nameTaken: string;
  /** The junction table of a many_via relation and its reverse index. */
  createJunction(table: string): string[];
  dropJunction(table: string): string;
}

/**
 * The statements of a change of a field's values (DdlDialect.fill): `column` of `table` is the new column, of
 * stored type `type`, that takes the converted values before it takes the old one's place.
 */
export interface ColumnFill {
  begin(table: string, column: string, type: StoredType): string[];
  chunk(table: string, column: string, type: StoredType): string;
  /** After the last chunk. */
  ready(table: string, column: string, type: StoredType): string[];
  /** Makes `column` hold every value given (null elsewhere). */
  end(table: string, column: string, type: StoredType): string[];
  /**
   * Where the engine can change a column's type in place with a cast of its values: `differing`, a count (`n`) of the
   * rows whose cast value is not the value given (0: the cast converts exactly so), and `alter`, the change in
   * place. null where no cast applies.
   */
  inPlace?(table: string, field: string, from: StoredType, to: StoredType): { differing: string; alter: string[] } | null;
}

/** How a search of a collection's full-text index reads (see FtsDialect.search). */
export interface FtsSearch {
  /** The collection table joined with what the search needs (the FROM clause). */
  from: Fragment;
  /** The condition "the row matches". */
  match: Cond;
  /** The relevance of a matching row, an expression without values; best first in `rankDesc` order. */
  rank: string;
  rankDesc: boolean;
}

/** A collection's full-text index over its text fields (`name` is the collection's). */
export interface FtsDialect {
  /** Creates the index and what keeps it current on every write (after dropping any left by an earlier one). */
  create(name: string, fields: readonly string[]): string[];
  /** Drops the index and what keeps it current (nothing when there is none). */
  drop(name: string): string[];
  /** What must be dropped beside the collection's table, which takes the rest with it. */
  dropBesideTable(name: string): string[];
  /** Brings the index over a new list of text fields. */
  refields(name: string, fields: readonly string[]): string[];
  /** What keeps the index current once a text field was renamed (`fields`: the text fields under their new names). */
  renamed(name: string, fields: readonly string[]): string[];
  /** COUNT(*) AS n of the active records in the index. */
  indexedCount(name: string): string;
  /** The reading of a search for these terms (400 when they are malformed). */
  search(name: string, tokens: readonly SearchToken[]): FtsSearch;
  /** The message of an engine error refusing a search's query text, else null (a safety net: queries are written valid). */
  queryError(err: unknown): string | null;
  /**
   * Present when the index starts empty and is filled from the existing rows in steps (SQLite): the statements of
   * one step. Without it the index is complete when `create` returns.
   */
  readonly steps?: FtsSteps;
}

/** The statements of a build in steps (FtsDialect.steps), over the collection's rows in their storage order. */
export interface FtsSteps {
  /** `last` (the last row's position, or null) and `total` rows of the collection. */
  extent(name: string): string;
  /** `upto` (the position of the last row of the step, or null) and `n` rows: parameters after, last, step size. */
  next(name: string): string;
  /** Indexes the rows of one step, again if already there: parameters after, upto. */
  fill(name: string, fields: readonly string[]): string;
}
