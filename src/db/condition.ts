import { q } from "./ident.ts";

// The neutral form of a condition: what filters, read rules and relation filters mean, built by the query
// layer and spelled by an engine's dialect (Dialect.cond) into SQL text with `?` placeholders. Identifiers
// arrive quoted (column references are built with `q`), every value is bound. A raw fragment comes only from
// src/db (the full-text match of Dialect.fts): nothing above it writes SQL into a condition.

/** A value a condition binds. */
export type Bound = string | number | null;

/** A SQL fragment and its bound values, in order. */
export interface Fragment {
  sql: string;
  params: Bound[];
}

/** How a column stores its values: a field type, or `integer` for the 64-bit whole numbers of times (`_created_at`). */
export type ColumnType = "text" | "number" | "boolean" | "json" | "integer";

/** A column reference: its quoted, qualified text (`"posts"."title"`, `j."to_id"`) and how it stores values. */
export interface Column {
  k: "col";
  sql: string;
  type: ColumnType;
}

export interface Value {
  k: "val";
  v: Bound;
}

export type Operand = Column | Value;

export type CompareOp = "=" | "<" | ">" | "<=" | ">=";

/** The JSON kind an `element` condition compares an array's elements as. */
export type ElementKind = "text" | "number" | "boolean";

export type Cond =
  | { k: "true" }
  | { k: "false" }
  /** `a op b`: unknown (no row) when either is null. */
  | { k: "cmp"; op: CompareOp; a: Operand; b: Operand }
  /** `a` differs from `b`, null counting as a value of its own (SQL's IS DISTINCT FROM). */
  | { k: "distinct"; a: Operand; b: Operand }
  | { k: "null"; a: Operand; not: boolean }
  /** The column's value, read as text, matches a LIKE pattern (`%`, `_`), ignoring ASCII case, with no escape character. */
  | { k: "like"; a: Column; pattern: string }
  /** `a` is one of `values` (each bound: the text changes with their number). */
  | { k: "in"; a: Operand; values: readonly Bound[] }
  /** The text `a` is one of `values`, bound as one parameter: one statement text for any number of values. */
  | { k: "oneOf"; a: Operand; values: readonly string[] }
  | { k: "and"; of: readonly Cond[] }
  | { k: "or"; of: readonly Cond[] }
  | { k: "not"; c: Cond }
  /** A row of `table` (named `alias` in `where`) meets `where`, which may name the outer query's columns. */
  | { k: "exists"; table: string; alias: string; where: Cond }
  /**
   * `a` is among the values of `column` over the rows of `table` (named `alias`) that meet `where`: `a IN (SELECT
   * …)`, which the engine answers once for every outer row when `where` names no outer column. Unknown (NULL)
   * rather than false where the column holds a null and `a` is not found: for positive positions only.
   */
  | { k: "inRows"; a: Operand; table: string; alias: string; column: Column; where: Cond }
  /**
   * Some element of the JSON array `array` holds equals `value` as a JSON value of kind `kind` (a string, a number
   * by value, a boolean); with `differs`, some element does not equal it (a null `value` equals no element). A
   * column holding anything but an array has no element. Never null.
   */
  | { k: "element"; array: Column; value: Operand; kind: ElementKind; differs: boolean }
  | { k: "raw"; sql: string; params: readonly Bound[] };

export const TRUE: Cond = { k: "true" };
export const FALSE: Cond = { k: "false" };

/**
 * A column reference: `qualifier` is a quoted table name or a short alias (`j`), or null for a column of the
 * only table; `name` a validated column name.
 */
export function col(qualifier: string | null, name: string, type: ColumnType): Column {
  return { k: "col", sql: qualifier === null ? q(name) : `${qualifier}.${q(name)}`, type };
}

export function val(v: Bound): Value {
  return { k: "val", v };
}

export function and(of: readonly Cond[]): Cond {
  return of.length === 1 ? of[0]! : { k: "and", of };
}

export function or(of: readonly Cond[]): Cond {
  return of.length === 1 ? of[0]! : { k: "or", of };
}

const ALIAS_RE = /^[a-z][a-z0-9_]{0,15}$/;

/**
 * Aliases of subqueries that no collection table can be called (collection names starting `pg_` are reserved),
 * so an alias never hides the outer query's table from a correlated reference: `pg_r1`, `pg_r2`, ...
 */
export function reservedAlias(prefix: string, n: number): string {
  return `pg_${prefix}${n}`;
}

/** `alias`, refused unless it is safe to write into SQL as it is. */
export function checkedAlias(alias: string): string {
  if (!ALIAS_RE.test(alias)) throw new Error(`refusing unsafe alias ${JSON.stringify(alias)}`);
  return alias;
}

/** A row of `table` meets `where`; `alias` names its columns there (see `col`). */
export function exists(table: string, alias: string, where: Cond): Cond {
  return { k: "exists", table, alias: checkedAlias(alias), where };
}

/** The one parameter of Dialect.inList and of a `oneOf` condition. */
export function listParam(values: readonly string[]): string {
  return JSON.stringify(values);
}

/** Whether a number can be a 64-bit integer column's parameter (see Spelling.integerCompare). */
export function fitsInt64(v: Bound): boolean {
  // -2^63 cannot: the engine sends a number as its shortest spelling, -9223372036854776000 for it, past the range.
  return typeof v === "number" && Number.isInteger(v) && Math.abs(v) < 2 ** 63;
}

/** What a dialect spells its own way; the rest of a condition reads the same on every engine. */
export interface Spelling {
  /** The operator of `distinct`. */
  distinct: string;
  /** `like` on a column: the text with one `?`, the pattern. */
  like(column: string, type: ColumnType): string;
  /** `oneOf`: what follows the operand, with one `?`. */
  oneOf: string;
  /**
   * `element`: the condition on the array column's JSON text `array` and the value `value` (a column, or `?`
   * bound to a string, a number or 1/0 for a boolean) of JSON kind `kind`. Never null, also where `value` is.
   */
  element(array: string, value: string, kind: ElementKind, differs: boolean): string;
  /**
   * A comparison of a 64-bit integer column with a number that no such column holds (a fraction, a whole number
   * past the range, ±Infinity), where the engine cannot bind such a number for it: the equivalent condition.
   * Undefined: the engine compares any number by value.
   */
  integerCompare?(column: string, op: CompareOp | "distinct", v: number, params: Bound[]): string;
}

/**
 * Renders `c` in `spelling`: the SQL text, its values appended to `params` in order. Deterministic (the same
 * condition shape gives the same text, so prepared statements are found again) and with the few parentheses
 * precedence needs: AND inside AND is flattened; an OR of several terms is parenthesised; an OR drops the
 * terms that are FALSE.
 */
export function renderCond(c: Cond, params: Bound[], spelling: Spelling): string {
  switch (c.k) {
    case "true":
      return "TRUE";
    case "false":
      return "FALSE";
    case "cmp": {
      const fixed = outOfRange(c.a, c.op, c.b, params, spelling);
      if (fixed !== undefined) return fixed;
      return `${operand(c.a, params)} ${c.op} ${operand(c.b, params)}`;
    }
    case "distinct": {
      const fixed = outOfRange(c.a, "distinct", c.b, params, spelling);
      if (fixed !== undefined) return fixed;
      return `${operand(c.a, params)} ${spelling.distinct} ${operand(c.b, params)}`;
    }
    case "null":
      return `${operand(c.a, params)} ${c.not ? "IS NOT NULL" : "IS NULL"}`;
    case "like":
      params.push(c.pattern);
      return spelling.like(c.a.sql, c.a.type);
    case "in": {
      let values = c.values;
      // A number an integer column cannot hold equals none of its values.
      if (spelling.integerCompare && c.a.k === "col" && c.a.type === "integer") values = values.filter((v) => typeof v !== "number" || fitsInt64(v));
      if (!values.length) return "FALSE";
      const a = operand(c.a, params);
      let marks = "?";
      for (let i = 1; i < values.length; i++) marks += ", ?";
      for (const v of values) params.push(v);
      return `${a} IN (${marks})`;
    }
    case "oneOf": {
      const a = operand(c.a, params);
      params.push(listParam(c.values));
      return `${a} ${spelling.oneOf}`;
    }
    case "and": {
      if (!c.of.length) return "TRUE";
      let sql = "";
      for (const t of c.of) {
        // An empty AND inside another adds nothing.
        if (t.k === "and" && !t.of.length) continue;
        const part = renderCond(t, params, spelling);
        sql = sql ? `${sql} AND ${part}` : part;
      }
      return sql || "TRUE";
    }
    case "or": {
      const parts: string[] = [];
      for (const t of c.of) {
        const part = renderTerm(t, params, spelling);
        if (part !== "FALSE") parts.push(part);
      }
      if (!parts.length) return "FALSE";
      return parts.length === 1 ? parts[0]! : `(${parts.join(" OR ")})`;
    }
    case "not":
      return c.c.k === "exists" ? `NOT ${renderCond(c.c, params, spelling)}` : `NOT (${renderCond(c.c, params, spelling)})`;
    case "exists":
      return `EXISTS (SELECT 1 FROM ${q(c.table)} AS ${c.alias} WHERE ${renderCond(c.where, params, spelling)})`;
    case "inRows": {
      const a = operand(c.a, params);
      return `${a} IN (SELECT ${c.column.sql} FROM ${q(c.table)} AS ${checkedAlias(c.alias)} WHERE ${renderCond(c.where, params, spelling)})`;
    }
    case "element":
      return spelling.element(c.array.sql, operand(c.value, params), c.kind, c.differs);
    case "raw":
      for (const v of c.params) params.push(v);
      return c.sql;
  }
}

/** A term of an AND or OR: an AND inside an OR is parenthesised, for the reader. */
function renderTerm(t: Cond, params: Bound[], spelling: Spelling): string {
  if (t.k === "and") {
    const inner = renderCond(t, params, spelling);
    return t.of.length > 1 ? `(${inner})` : inner;
  }
  return renderCond(t, params, spelling);
}

function operand(o: Operand, params: Bound[]): string {
  if (o.k === "col") return o.sql;
  params.push(o.v);
  return "?";
}

/** Spelling.integerCompare for `a op b` when it applies, else undefined. */
function outOfRange(a: Operand, op: CompareOp | "distinct", b: Operand, params: Bound[], spelling: Spelling): string | undefined {
  if (!spelling.integerCompare || a.k !== "col" || a.type !== "integer" || b.k !== "val") return undefined;
  const v = b.v;
  if (typeof v !== "number" || fitsInt64(v)) return undefined;
  return spelling.integerCompare(a.sql, op, v, params);
}
