import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { and, col, FALSE, or, TRUE, val, type Column, type ColumnType, type Cond, type CompareOp } from "../db/condition.ts";
import { q } from "../db/ident.ts";
import { SYSTEM_FIELDS, SYSTEM_FIELD_TYPES, storedType, type Collection, type FieldType } from "../catalog/types.ts";
import { badRequest } from "../errors.ts";
import { accessOf, type Access } from "../rules/access.ts";
import { ftsQuery, ftsQueryError } from "../search/fts.ts";
import type { FilterCond, ReadQuery, SortKey } from "./parse.ts";

// AST → a condition (db/condition.ts) the engine's dialect spells, and the SQL of a read around it. The one
// builder behind list, count, aggregate and search: identifiers come only from the catalog (validated names,
// quoted by q()), every client value is a bound parameter.

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

/** The part a full-text `search` plays in a read (spelled per engine: FtsDialect.search). */
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
}

/**
 * A filter on a field the plain column rules do not cover (e.g. a relation's "linked to"
 * filter): returns the condition, or undefined to leave the field to the default rules.
 * `table` is the quoted name of the collection table for correlated subqueries; `p` the requester,
 * whose read rules apply to whatever other collection the condition looks at.
 */
export type FilterExtension = (h: CollectionHandle, cond: FilterCond, table: string, p: Principal) => Cond | undefined;

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

/** The system fields stored as 64-bit integers (BIGINT on PostgreSQL, INTEGER on SQLite). */
const INTEGER_FIELDS: ReadonlySet<string> = new Set(["_created_at", "_updated_at", "_deleted_at"]);

/** A field of `c` as a condition's column: qualified, with the type its column stores. */
function fieldColumn(c: Collection, field: FieldRef): Column {
  const type: ColumnType = INTEGER_FIELDS.has(field.name) ? "integer" : storedType(field.type);
  return col(q(c.name), field.name, type);
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

const COMPARE: Record<string, CompareOp> = { gt: ">", lt: "<", gte: ">=", lte: "<=" };
/** Most values one `in` filter takes. */
export const MAX_IN_VALUES = 500;

/** One filter condition on a plain column (CONTRACT §4). `null` means SQL NULL for eq, ne and in. */
function compileFilter(c: Collection, cond: FilterCond): Cond {
  const field = resolveField(c, cond.field);
  const a = fieldColumn(c, field);
  const isNull = cond.value === "null";
  switch (cond.op) {
    case "eq":
      return isNull ? { k: "null", a, not: false } : { k: "cmp", op: "=", a, b: val(typedValue(field, cond.value)) };
    case "ne":
      // "not equal" keeps records where the field is null: null is not equal to the value.
      return isNull ? { k: "null", a, not: true } : { k: "distinct", a, b: val(typedValue(field, cond.value)) };
    case "gt":
    case "lt":
    case "gte":
    case "lte":
      if (isNull) throw badRequest(`"${cond.op}" cannot compare with null: use eq or ne`);
      return { k: "cmp", op: COMPARE[cond.op]!, a, b: val(typedValue(field, cond.value)) };
    case "like":
      return { k: "like", a, pattern: cond.value.includes("%") ? cond.value : `%${cond.value}%` };
    case "in": {
      const items = cond.value.split(",");
      if (items.length > MAX_IN_VALUES) throw badRequest(`"in" takes at most ${MAX_IN_VALUES} values`);
      const values = items.filter((v) => v !== "null").map((v) => typedValue(field, v));
      const parts: Cond[] = [];
      if (values.length) parts.push({ k: "in", a, values });
      if (values.length < items.length) parts.push({ k: "null", a, not: false });
      return parts.length ? or(parts) : FALSE;
    }
  }
}

/** The visibility conditions of a collection's reads (made once per catalog entry). */
const visibility = new WeakMap<Collection, { active: Cond; owner: Column }>();

function visibilityOf(c: Collection): { active: Cond; owner: Column } {
  let v = visibility.get(c);
  if (!v) {
    const table = q(c.name);
    v = { active: { k: "null", a: col(table, "_deleted_at", "integer"), not: false }, owner: col(table, "_owner_id", "text") };
    visibility.set(c, v);
  }
  return v;
}

function ownerIs(v: { owner: Column }, p: Principal): Cond {
  return { k: "cmp", op: "=", a: v.owner, b: val(p.kind === "user" ? p.userId : "") };
}

/** The soft-deleted records `p` may see with `include_deleted`: those its delete rule holds for. */
function deletedShown(c: Collection, p: Principal, v: { owner: Column }): Cond {
  const del = accessOf(c, "delete", p);
  if (del === null) return FALSE;
  if (del === "all") return TRUE;
  if (del === "own") return ownerIs(v, p);
  return del.cond;
}

/** True when a condition reads other tables (a rule's relation path or `@exists`): a count of it depends on them. */
function reachesOut(c: Cond): boolean {
  switch (c.k) {
    case "exists":
    case "inRows":
      return true;
    case "and":
    case "or":
      return c.of.some(reachesOut);
    case "not":
      return reachesOut(c.c);
    default:
      return false;
  }
}

/** Renders a condition in the engine's dialect. */
function render(ctx: AppContext, cond: Cond): Where {
  const params: SqlValue[] = [];
  return { sql: ctx.db.sql.cond(cond, params), params };
}

/**
 * The FROM and WHERE every read shares: soft-delete visibility, the owner filter of an
 * `owner` read rule, the filters, and the full-text match. `extension` is asked first for each
 * filter (the relations' filter on their virtual fields) before it falls to the column rules.
 */
export function planRead(
  ctx: AppContext,
  h: CollectionHandle,
  rq: ReadQuery,
  access: Access,
  p: Principal,
  extension: FilterExtension,
): ReadPlan {
  const c = h.col;
  const table = q(c.name);
  const conds: Cond[] = [];
  let from: Where = { sql: table, params: [] };
  let search: SearchPlan | null = null;
  if (rq.search !== null) {
    if (!c.fts.enabled)
      throw badRequest(`collection "${c.name}" has no full-text index: enable it with POST /admin/collections/${c.name}/fts`);
    const fts = ftsQuery(ctx.db, c.name, rq.search);
    from = fts.from;
    search = { match: render(ctx, fts.match), rank: { expr: fts.rank, desc: fts.rankDesc, rank: true } };
    conds.push(fts.match);
  }
  const seen: Cond[] = [];
  const v = visibilityOf(c);
  let external = false;
  if (!rq.includeDeleted) seen.push(v.active);
  else if (!rq.anyDeleted) {
    // SECURITY: soft-deleted records show only to callers whose delete rule holds for them (CONTRACT §12).
    const del = deletedShown(c, p, v);
    if (del.k !== "true") seen.push(or([v.active, del]));
    external ||= reachesOut(del);
  }
  // SECURITY: the read rule in every read's WHERE: an `owner` rule shows a user only their own records, an
  // expression only the records it lets through, so pages are full and totals count only those.
  if (access === "own") seen.push(ownerIs(v, p));
  else if (access !== "all") {
    seen.push(access.cond);
    external ||= reachesOut(access.cond);
  }
  const visible = render(ctx, and(seen));
  conds.push(...seen);
  for (const cond of rq.filters) {
    let w = extension(h, cond, table, p);
    if (w) external = true;
    else w = compileFilter(c, cond);
    conds.push(w);
  }
  return { table, from, where: render(ctx, { k: "and", of: conds }), visible, search, external };
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

/** ORDER BY clause text: the terms (nulls first ascending, last descending: cursors rely on it), then `_id` ascending (CONTRACT §8b). */
export function orderBySql(ctx: AppContext, plan: ReadPlan, terms: OrderTerm[]): string {
  return [...terms.map((t) => ctx.db.sql.order(t.expr, t.desc)), `${plan.table}."_id" ASC`].join(", ");
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
export async function runRead<T>(ctx: AppContext, plan: ReadPlan, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const refused = plan.search && ftsQueryError(ctx.db, err);
    if (refused) throw badRequest(`invalid search query: ${refused}`);
    throw err;
  }
}
