import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import type { Dialect } from "../db/engine.ts";
import { q } from "../collections/ddl.ts";
import { SYSTEM_FIELDS, SYSTEM_FIELD_TYPES, type Collection, type FieldType } from "../collections/types.ts";
import { badRequest } from "../errors.ts";
import type { Access } from "../rules/access.ts";
import { ftsQuery, isFtsQueryError } from "../search/fts.ts";
import type { FilterCond, ReadQuery, SortKey } from "./parse.ts";

// AST → SQL. The one builder behind list, count, aggregate and search: identifiers come only
// from the catalog (validated names, quoted by q()), every client value is a bound parameter.

export type SqlValue = string | number | null;

/** A SQL fragment and its bound values. */
export interface Where {
  sql: string;
  params: SqlValue[];
}

/** A field a query may name: a system field or a user field, with its stored type. */
export interface FieldRef {
  name: string;
  type: FieldType;
}

/** The part a full-text `search` plays in a read (spelled per engine by src/search/fts.ts). */
export interface SearchPlan {
  /** The condition "the row matches the search", part of the plan's `where`. */
  match: Where;
  /** The relevance, best match first, as the ORDER BY term of a search without `sort`. */
  rank: OrderTerm;
}

/** The FROM and WHERE of a read, and the full-text search when one takes part. */
export interface ReadPlan {
  /** The quoted collection table; every column is qualified with it. */
  table: string;
  /**
   * The FROM clause: the table, joined with what a search needs. Its values (none without a search)
   * come before those of `where` in every statement: `[...from.params, ...where.params]`.
   */
  from: Where;
  where: Where;
  /** The part of `where` that decides which records the requester may see at all (soft delete, owner). */
  visible: Where;
  /** The full-text search, else null. */
  search: SearchPlan | null;
  /** True when a filter extension's condition looks at other tables (e.g. a relation's "linked to"). */
  external: boolean;
  /** The engine the plan's SQL is for. */
  dialect: Dialect;
}

/**
 * A filter on a field the plain column rules do not cover (e.g. a relation's "linked to"
 * filter): returns the condition, or undefined to leave the field to the default rules.
 * `table` is the quoted, qualified name of the collection table for correlated subqueries; `p`
 * the requester, whose read rules apply to whatever other collection the condition looks at.
 */
export type FilterExtension = (ctx: AppContext, col: Collection, cond: FilterCond, table: string, p: Principal) => Where | undefined;

/** Resolves a field name (system or user, case-insensitive) or answers 400. */
export function resolveField(col: Collection, name: string): FieldRef {
  const lower = name.toLowerCase();
  const sys = SYSTEM_FIELDS.find((f) => f === lower);
  if (sys) return { name: sys, type: SYSTEM_FIELD_TYPES[sys] };
  const def = col.fieldMap.get(lower);
  if (!def) throw badRequest(`unknown field "${name.slice(0, 80)}" in collection "${col.name}"`);
  return def;
}

/** A qualified column reference. */
export function column(col: Collection, field: string): string {
  return `${q(col.name)}.${q(field)}`;
}

const NUMBER_RE = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/** Reads a raw filter value by the field's type; 400 when it cannot be one. */
export function typedValue(field: FieldRef, raw: string): SqlValue {
  if (field.type === "number") {
    if (!NUMBER_RE.test(raw)) throw badRequest(`"${field.name}" is a number field: "${raw.slice(0, 80)}" is not a number`);
    return Number(raw);
  }
  if (field.type === "boolean") {
    const lower = raw.toLowerCase();
    if (lower === "true" || lower === "1") return 1;
    if (lower === "false" || lower === "0") return 0;
    throw badRequest(`"${field.name}" is a boolean field: use true or false, not "${raw.slice(0, 80)}"`);
  }
  return raw;
}

const COMPARE: Record<string, string> = { gt: ">", lt: "<", gte: ">=", lte: "<=" };
/** Most values one `in` filter takes. */
export const MAX_IN_VALUES = 500;

/** The system fields stored as 64-bit integers (collections/ddl.ts: BIGINT on PostgreSQL, INTEGER on SQLite). */
const INTEGER_FIELDS: ReadonlySet<string> = new Set(["_created_at", "_updated_at", "_deleted_at"]);

const NOTHING: Where = { sql: "FALSE", params: [] };
const EVERYTHING: Where = { sql: "TRUE", params: [] };

/**
 * Whether a filter value can be a 64-bit integer column's parameter. -2^63 cannot: the engine sends a number
 * as its shortest spelling, -9223372036854776000 for it, past the range (so no row it wrote holds -2^63).
 */
function fitsInt64(v: SqlValue): boolean {
  return typeof v === "number" && Number.isInteger(v) && Math.abs(v) < 2 ** 63;
}

/**
 * `column op v` on a 64-bit integer column, for a number `v` no such column holds (a fraction, a whole number
 * past the range, ±Infinity), as SQLite's comparison by value answers it: the same comparison with a whole
 * bound (`> 1.5` is `> 1`, `>= 1.5` is `>= 2`), or every non-null row, or none. PostgreSQL refuses such a
 * value as a BIGINT parameter; casting the column instead would keep its index from serving the filter.
 */
function integerBound(c: string, op: "gt" | "lt" | "gte" | "lte", v: number): Where {
  const bound = op === "gt" || op === "lte" ? Math.floor(v) : Math.ceil(v);
  if (fitsInt64(bound)) return { sql: `${c} ${COMPARE[op]} ?`, params: [bound] };
  // Past the range (or infinite): a lower bound above it, or an upper bound below it, admits no row.
  const lower = op === "gt" || op === "gte";
  return (lower ? bound > 0 : bound < 0) ? NOTHING : { sql: `${c} IS NOT NULL`, params: [] };
}

/** One filter condition on a plain column (CONTRACT §4). `null` means SQL NULL for eq, ne and in. */
function compileFilter(col: Collection, cond: FilterCond, dialect: Dialect): Where {
  const field = resolveField(col, cond.field);
  const c = column(col, field.name);
  const isNull = cond.value === "null";
  // PostgreSQL takes only a 64-bit integer for a BIGINT parameter; any other number is compared by value,
  // as SQLite does, through an equivalent condition (a null field is "not equal" to it, as to any value).
  const integer = dialect === "postgres" && INTEGER_FIELDS.has(field.name);
  switch (cond.op) {
    case "eq": {
      if (isNull) return { sql: `${c} IS NULL`, params: [] };
      const v = typedValue(field, cond.value);
      return integer && !fitsInt64(v) ? NOTHING : { sql: `${c} = ?`, params: [v] };
    }
    case "ne": {
      // "not equal" keeps records where the field is null: null is not equal to the value.
      if (isNull) return { sql: `${c} IS NOT NULL`, params: [] };
      const v = typedValue(field, cond.value);
      return integer && !fitsInt64(v) ? EVERYTHING : { sql: `${c} ${dialect === "postgres" ? "IS DISTINCT FROM" : "IS NOT"} ?`, params: [v] };
    }
    case "gt":
    case "lt":
    case "gte":
    case "lte": {
      if (isNull) throw badRequest(`"${cond.op}" cannot compare with null: use eq or ne`);
      const v = typedValue(field, cond.value);
      return integer && !fitsInt64(v) ? integerBound(c, cond.op, v as number) : { sql: `${c} ${COMPARE[cond.op]} ?`, params: [v] };
    }
    case "like": {
      const pattern = cond.value.includes("%") ? cond.value : `%${cond.value}%`;
      // SQLite's LIKE ignores ASCII case and reads any value as text; PostgreSQL's ILIKE needs the text,
      // of a boolean the 1 or 0 SQLite stores (PostgreSQL's own text of it is true or false). SQLite's LIKE
      // has no escape character: ESCAPE '' makes a backslash an ordinary character on PostgreSQL too.
      if (dialect === "postgres") {
        const text = field.type === "text" ? c : field.type === "boolean" ? `CAST(CAST(${c} AS INTEGER) AS TEXT)` : `CAST(${c} AS TEXT)`;
        return { sql: `${text} ILIKE ? ESCAPE ''`, params: [pattern] };
      }
      return { sql: `${c} LIKE ?`, params: [pattern] };
    }
    case "in": {
      const items = cond.value.split(",");
      if (items.length > MAX_IN_VALUES) throw badRequest(`"in" takes at most ${MAX_IN_VALUES} values`);
      const named = items.filter((v) => v !== "null").map((v) => typedValue(field, v));
      // A number an integer column cannot hold equals none of its values.
      const values = integer ? named.filter(fitsInt64) : named;
      const parts: string[] = [];
      if (values.length) parts.push(`${c} IN (${values.map(() => "?").join(", ")})`);
      if (named.length < items.length) parts.push(`${c} IS NULL`);
      if (!parts.length) return NOTHING;
      return { sql: parts.length > 1 ? `(${parts.join(" OR ")})` : parts[0], params: values };
    }
  }
}

/**
 * The FROM and WHERE every read shares: soft-delete visibility, the owner filter of an
 * `owner` read rule, the filters, and the full-text match. `extension` is asked first for each
 * filter (the relations' filter on their virtual fields) before it falls to the column rules.
 */
export function planRead(
  ctx: AppContext,
  col: Collection,
  rq: ReadQuery,
  access: Access,
  p: Principal,
  extension: FilterExtension,
): ReadPlan {
  const table = q(col.name);
  const parts: string[] = [];
  const params: SqlValue[] = [];
  let from: Where = { sql: table, params: [] };
  let search: SearchPlan | null = null;
  if (rq.search !== null) {
    if (!col.fts.enabled)
      throw badRequest(`collection "${col.name}" has no full-text index: enable it with POST /admin/collections/${col.name}/fts`);
    const fts = ftsQuery(ctx.db, col.name, rq.search);
    from = fts.from;
    search = { match: fts.match, rank: { expr: fts.rank, desc: fts.rankDesc, rank: true } };
    parts.push(fts.match.sql);
    params.push(...fts.match.params);
  }
  const visible: Where = { sql: "TRUE", params: [] };
  const seen: string[] = [];
  if (!rq.includeDeleted) seen.push(`${table}."_deleted_at" IS NULL`);
  if (access === "own") {
    // SECURITY: an `owner` read rule shows a user only their own records, in every read.
    seen.push(`${table}."_owner_id" = ?`);
    visible.params.push(p.kind === "user" ? p.userId : "");
  }
  if (seen.length) {
    visible.sql = seen.join(" AND ");
    parts.push(visible.sql);
    params.push(...visible.params);
  }
  let external = false;
  for (const cond of rq.filters) {
    let w = extension(ctx, col, cond, table, p);
    if (w) external = true;
    else w = compileFilter(col, cond, ctx.db.dialect);
    parts.push(w.sql);
    params.push(...w.params);
  }
  return { table, from, where: { sql: parts.length ? parts.join(" AND ") : "TRUE", params }, visible, search, external, dialect: ctx.db.dialect };
}

/** One ORDER BY term. */
export interface OrderTerm {
  expr: string;
  desc: boolean;
  /** The full-text relevance, which exists only for rows matching the search. */
  rank?: boolean;
}

/** The ORDER BY terms of a list, without the final `_id` tie-break; relevance when searching unsorted. */
export function orderTerms(col: Collection, plan: ReadPlan, sort: SortKey[]): OrderTerm[] {
  if (!sort.length) return plan.search ? [plan.search.rank] : [];
  return sort.map((k) => ({ expr: column(col, resolveField(col, k.field).name), desc: k.desc }));
}

/** ORDER BY clause text: the terms, then `_id` ascending (CONTRACT §8b). */
export function orderBySql(plan: ReadPlan, terms: OrderTerm[]): string {
  // PostgreSQL is told SQLite's order of nulls (first ascending, last descending): cursors rely on it.
  const nulls = plan.dialect === "postgres" ? (desc: boolean) => (desc ? " NULLS LAST" : " NULLS FIRST") : () => "";
  return [...terms.map((t) => `${t.expr} ${t.desc ? "DESC" : "ASC"}${nulls(t.desc)}`), `${plan.table}."_id" ASC`].join(", ");
}

/**
 * The keyset condition "comes after the cursor row" for these ORDER BY terms, given the
 * cursor row's values of each term. SQLite sorts NULL first ascending and last descending.
 */
function keysetWhere(plan: ReadPlan, terms: OrderTerm[], values: SqlValue[], id: string): Where {
  const ors: string[] = [];
  const params: SqlValue[] = [];
  const eqSql: string[] = [];
  const eqParams: SqlValue[] = [];
  terms.forEach((t, i) => {
    const v = values[i];
    let after: Where | null;
    if (v === null) after = t.desc ? null : { sql: `${t.expr} IS NOT NULL`, params: [] };
    else after = t.desc ? { sql: `(${t.expr} < ? OR ${t.expr} IS NULL)`, params: [v] } : { sql: `${t.expr} > ?`, params: [v] };
    if (after) {
      ors.push([...eqSql, after.sql].join(" AND "));
      params.push(...eqParams, ...after.params);
    }
    if (v === null) eqSql.push(`${t.expr} IS NULL`);
    else {
      eqSql.push(`${t.expr} = ?`);
      eqParams.push(v);
    }
  });
  ors.push([...eqSql, `${plan.table}."_id" > ?`].join(" AND "));
  params.push(...eqParams, id);
  return { sql: `(${ors.map((o) => `(${o})`).join(" OR ")})`, params };
}

/**
 * The records after the cursor row, as one or two conditions to read in turn (all rows of
 * the first precede all rows of the second in the listing order). Each gives the first sort
 * key a plain range, so an index on it serves the page without sorting every later record;
 * the rows where that key is null (which sort at one end) are the second part when needed.
 */
export function keysetPhases(plan: ReadPlan, terms: OrderTerm[], values: SqlValue[], id: string): Where[] {
  if (!terms.length) return [{ sql: `${plan.table}."_id" > ?`, params: [id] }];
  const [first, ...more] = terms;
  const v = values[0];
  const rest = keysetWhere(plan, more, values.slice(1), id);
  const e = first.expr;
  const isNull: Where = { sql: `${e} IS NULL`, params: [] };
  if (v === null) {
    const sameNull: Where = { sql: `${e} IS NULL AND ${rest.sql}`, params: rest.params };
    return first.desc ? [sameNull] : [sameNull, { sql: `${e} IS NOT NULL`, params: [] }];
  }
  const op = first.desc ? "<" : ">";
  const range: Where = { sql: `${e} ${op}= ? AND (${e} ${op} ? OR ${rest.sql})`, params: [v, v, ...rest.params] };
  // The relevance of a matching row is never null.
  return first.desc && !first.rank ? [range, isNull] : [range];
}

/** Runs a read; a full-text query the engine cannot parse becomes 400, never 500. */
export async function runRead<T>(plan: ReadPlan, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (plan.search && isFtsQueryError(err)) throw badRequest(`invalid search query: ${(err as Error).message.replace(/^fts5: /, "")}`);
    throw err;
  }
}
