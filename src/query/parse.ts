import { badRequest } from "../errors.ts";

// Query string → a small AST. Field names and values are checked against the collection
// later, in sql.ts, where the field types are known; here only the shapes are checked.

export const FILTER_OPS = ["eq", "ne", "gt", "lt", "gte", "lte", "like", "in"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** One `field:op:value` condition, value still raw text. */
export interface FilterCond {
  field: string;
  op: FilterOp;
  value: string;
}

export interface SortKey {
  field: string;
  desc: boolean;
}

/** What list, count and aggregate share: which records are meant. */
export interface ReadQuery {
  filters: FilterCond[];
  search: string | null;
  includeDeleted: boolean;
  /**
   * With includeDeleted: soft-deleted rows count whatever the caller's delete rule allows (a realtime topic
   * matching a record it already may read, never a client's read, which sees them only under that rule).
   */
  anyDeleted?: boolean;
}

/** A list request, parsed from the query string (SPEC 4.2, CONTRACT §4). */
export interface ListQuery extends ReadQuery {
  limit: number;
  page: number;
  after: string | null;
  sort: SortKey[];
  /** The `fields` selection, or null for every field. */
  fields: string[] | null;
  /** `expand=a,b`: names of relation fields to embed (checked by the relations code). */
  expand: string[];
  /** `total=false` skips the count of matches (offset mode; cursor mode never counts). */
  total: boolean;
}

export const AGGREGATE_FNS = ["sum", "avg", "min", "max", "count"] as const;
export type AggregateFn = (typeof AGGREGATE_FNS)[number];

/** An aggregate request. */
export interface AggregateQuery extends ReadQuery {
  fn: AggregateFn;
  field: string | null;
  groupBy: string | null;
}

const MAX_FILTERS = 100;
const MAX_SORT_KEYS = 16;
const MAX_SEARCH_CHARS = 1000;
/**
 * The longest `like` pattern. Matching one costs up to the value's length times the pattern's per row (SQLite's
 * LIKE, on the server's thread, with no statement timeout; a realtime topic's filter, per event): a 2,000-character
 * pattern took 0.8 s against one 100 KB value.
 */
export const MAX_LIKE_CHARS = 256;
const BRACKET_RE = /^filter\[([^\][]*)\](?:\[([^\][]*)\])?$/;

function one(params: URLSearchParams, key: string): string | null {
  const all = params.getAll(key);
  return all.length ? all[all.length - 1] : null;
}

/** The scalar parameters of a read, as the route's schema checked them (absent: the default). */
export interface ReadOptions {
  include_deleted?: boolean;
}

/** The scalar parameters of a list: `limit` 1..500 (50), `page` (1), `total` (true). */
export interface ListOptions extends ReadOptions {
  limit?: number;
  page?: number;
  total?: boolean;
}

function asOp(raw: string, where: string): FilterOp {
  if (!(FILTER_OPS as readonly string[]).includes(raw))
    throw badRequest(`unknown filter operator "${raw.slice(0, 40)}" in ${where.slice(0, 100)}: use ${FILTER_OPS.join(", ")}`);
  return raw as FilterOp;
}

/** Comma-separated names; empty entries dropped. */
function list(raw: string | null): string[] {
  if (raw === null) return [];
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Every filter of a request: `filter=field:op:value` (repeatable) and `filter[field]`/`filter[field][op]`. */
export function parseFilters(params: URLSearchParams): FilterCond[] {
  const out: FilterCond[] = [];
  for (const [key, value] of params) {
    if (key === "filter") {
      const a = value.indexOf(":");
      const b = a < 0 ? -1 : value.indexOf(":", a + 1);
      if (a <= 0 || b < 0) throw badRequest(`filter "${value.slice(0, 100)}" must have the form field:op:value`);
      out.push({ field: value.slice(0, a), op: asOp(value.slice(a + 1, b), `filter "${value}"`), value: value.slice(b + 1) });
    } else if (key.startsWith("filter[")) {
      const m = BRACKET_RE.exec(key);
      if (!m || !m[1]) throw badRequest(`bad filter parameter "${key.slice(0, 100)}": use filter[field]=value or filter[field][op]=value`);
      out.push({ field: m[1], op: m[2] === undefined ? "eq" : asOp(m[2], `"${key}"`), value });
    }
    if (out.length > MAX_FILTERS) throw badRequest(`at most ${MAX_FILTERS} filters`);
  }
  for (const f of out) {
    if (f.op !== "like") continue;
    if (f.value.length > MAX_LIKE_CHARS) throw badRequest(`a like pattern is at most ${MAX_LIKE_CHARS} characters (filter on "${f.field.slice(0, 64)}")`);
    // SQLite's LIKE ends a pattern at a NUL (`%00` would match every row), PostgreSQL's does not: refused on both, as in `search`.
    if (f.value.includes("\0")) throw badRequest(`a like pattern cannot hold a NUL character (filter on "${f.field.slice(0, 64)}")`);
  }
  return out;
}

/** `sort`: `field`, `-field`, `field:asc`, `field:desc`; repeatable and comma-separated. */
export function parseSort(params: URLSearchParams): SortKey[] {
  const keys: SortKey[] = [];
  for (const raw of params.getAll("sort")) {
    for (const item of list(raw)) {
      let field = item;
      let desc = false;
      const colon = item.indexOf(":");
      if (colon >= 0) {
        field = item.slice(0, colon);
        const dir = item.slice(colon + 1).toLowerCase();
        if (dir !== "asc" && dir !== "desc") throw badRequest(`bad sort direction in "${item.slice(0, 100)}": use asc or desc`);
        desc = dir === "desc";
      }
      if (field.startsWith("-")) {
        if (colon >= 0) throw badRequest(`bad sort "${item.slice(0, 100)}": use -field or field:desc, not both`);
        field = field.slice(1);
        desc = true;
      }
      if (!field) throw badRequest(`bad sort "${item.slice(0, 100)}": a field name is needed`);
      keys.push({ field, desc });
    }
  }
  if (keys.length > MAX_SORT_KEYS) throw badRequest(`at most ${MAX_SORT_KEYS} sort keys`);
  return keys;
}

/** The parameters every read shares: filters, search, include_deleted. */
export function parseReadQuery(params: URLSearchParams, opts: ReadOptions): ReadQuery {
  const search = one(params, "search");
  if (search !== null && search.length > MAX_SEARCH_CHARS) throw badRequest(`search is at most ${MAX_SEARCH_CHARS} characters`);
  // A NUL ends the query text inside SQLite's FTS5 parser, which then fails: refuse it plainly.
  if (search?.includes("\u0000")) throw badRequest("search must not contain a NUL character");
  return {
    filters: parseFilters(params),
    search: search && search.trim() ? search : null,
    includeDeleted: opts.include_deleted ?? false,
  };
}

/** `fields=a,b` as a list and a single read take it: the last one given, its names; null when absent or blank. */
export function parseFields(params: URLSearchParams): string[] | null {
  const fields = one(params, "fields");
  return fields === null || !fields.trim() ? null : list(fields);
}

/** Parses the list parameters of a request. */
export function parseListQuery(params: URLSearchParams, opts: ListOptions): ListQuery {
  return {
    ...parseReadQuery(params, opts),
    limit: opts.limit ?? 50,
    page: opts.page ?? 1,
    after: one(params, "after") || null,
    sort: parseSort(params),
    fields: parseFields(params),
    expand: list(one(params, "expand")),
    total: opts.total ?? true,
  };
}

/** Parses `fn`, `field`, `group_by` and the shared read parameters of an aggregate request. */
export function parseAggregateQuery(params: URLSearchParams, opts: ReadOptions): AggregateQuery {
  const fn = one(params, "fn");
  if (!fn) throw badRequest(`fn is required: one of ${AGGREGATE_FNS.join(", ")}`);
  if (!(AGGREGATE_FNS as readonly string[]).includes(fn))
    throw badRequest(`unknown aggregate function "${fn.slice(0, 40)}": use ${AGGREGATE_FNS.join(", ")}`);
  const field = one(params, "field") || null;
  if (!field && fn !== "count") throw badRequest(`field is required for ${fn}`);
  return { ...parseReadQuery(params, opts), fn: fn as AggregateFn, field, groupBy: one(params, "group_by") || null };
}
