import type { AggregateOptions, Filter, FilterScalar, GetOptions, ListOptions, MatchOptions } from "./types.js";

function scalar(v: FilterScalar): string {
  return v === null ? "null" : String(v);
}

function joined(v: FilterScalar | readonly FilterScalar[]): string {
  return Array.isArray(v) ? v.map(scalar).join(",") : scalar(v as FilterScalar);
}

/** Adds `filter=field:op:value` parameters for a filter in either form. */
function addFilter<T>(params: URLSearchParams, filter: Filter<T> | undefined): void {
  if (filter === undefined) return;
  if (typeof filter === "string") return params.append("filter", filter);
  if (Array.isArray(filter)) {
    for (const f of filter as readonly string[]) params.append("filter", f);
    return;
  }
  for (const [field, value] of Object.entries(filter as Record<string, unknown>)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) params.append("filter", `${field}:in:${joined(value)}`);
    else if (value !== null && typeof value === "object") {
      for (const [op, v] of Object.entries(value as Record<string, FilterScalar | FilterScalar[] | undefined>))
        if (v !== undefined) params.append("filter", `${field}:${op}:${joined(v)}`);
    } else params.append("filter", `${field}:eq:${scalar(value as FilterScalar)}`);
  }
}

function set(params: URLSearchParams, key: string, value: string | number | boolean | null | undefined): void {
  if (value !== undefined && value !== null) params.set(key, String(value));
}

function list(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : value.join(",");
}

/** Query string of count (filter, search, include_deleted). */
export function matchQuery<T>(opts: MatchOptions<T> = {}): URLSearchParams {
  const params = new URLSearchParams();
  addFilter(params, opts.filter);
  set(params, "search", opts.search);
  if (opts.include_deleted) params.set("include_deleted", "true");
  return params;
}

/** Query string of get (fields, expand, include_deleted). */
export function getQuery<T>(opts: GetOptions<T> = {}): URLSearchParams {
  const params = new URLSearchParams();
  set(params, "fields", list(opts.fields));
  set(params, "expand", list(opts.expand));
  if (opts.include_deleted) params.set("include_deleted", "true");
  return params;
}

/** Query string of list: every option of count and get, plus sort and paging. */
export function listQuery<T>(opts: ListOptions<T> = {}): URLSearchParams {
  const params = matchQuery(opts);
  for (const [k, v] of getQuery(opts)) params.set(k, v);
  set(params, "sort", list(opts.sort as string | readonly string[] | undefined));
  set(params, "limit", opts.limit);
  set(params, "page", opts.page);
  set(params, "after", opts.after ?? opts.cursor);
  if (opts.total === false) params.set("total", "false");
  return params;
}

/** Query string of aggregate. */
export function aggregateQuery<T>(opts: AggregateOptions<T>): URLSearchParams {
  const params = matchQuery(opts);
  set(params, "fn", opts.fn);
  set(params, "field", opts.field);
  set(params, "group_by", opts.group_by);
  return params;
}
