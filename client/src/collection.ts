import { aggregateQuery, getQuery, listQuery, matchQuery } from "./query.js";
import type { Transport } from "./transport.js";
import type {
  AggregateGroup,
  AggregateOptions,
  BaasRecord,
  BatchOperation,
  BatchResult,
  FieldName,
  GetOptions,
  ListOptions,
  ListResult,
  MatchOptions,
  WritableFields,
} from "./types.js";

/**
 * A write's precondition (CONTRACT §15): the record as last read (its `_updated_at` is its version), the
 * version itself, or `"*"` (any existing record). A stale one fails with a BaasError of status 412,
 * code `precondition_failed`.
 */
export interface WriteOptions {
  ifMatch?: { _updated_at: number } | number | "*";
}

/** The `If-Match` header of a write's options (none without `ifMatch`). */
function ifMatchHeaders(opts: WriteOptions | undefined): { headers?: Record<string, string> } {
  const m = opts?.ifMatch;
  if (m === undefined) return {};
  return { headers: { "If-Match": m === "*" ? "*" : `"${typeof m === "number" ? m : m._updated_at}"` } };
}

/** The data API of one collection. `T` is the record type (e.g. from `baas types`). */
export interface CollectionApi<T extends object = BaasRecord> {
  readonly name: string;
  /** One page of records (offset mode, or cursor mode with `after`). */
  list(opts?: ListOptions<T>): Promise<ListResult<T>>;
  /** Every matching record, page after page by cursor (`limit` is the page size). */
  iterate(opts?: Omit<ListOptions<T>, "after" | "cursor" | "page">): AsyncGenerator<T, void, undefined>;
  get(id: string, opts?: GetOptions<T>): Promise<T>;
  create(data: WritableFields<T>): Promise<T>;
  /** Changes the fields given (`null` clears one); answers the whole record. `ifMatch`: only if the record is still at that version. */
  update(id: string, data: WritableFields<T>, opts?: WriteOptions): Promise<T>;
  /** Soft delete: answers the record with `_deleted_at` set. */
  delete(id: string, opts?: WriteOptions): Promise<T>;
  restore(id: string, opts?: WriteOptions): Promise<T>;
  count(opts?: MatchOptions<T>): Promise<number>;
  aggregate(opts: AggregateOptions<T> & { group_by: FieldName<T> }): Promise<{ groups: AggregateGroup[] }>;
  aggregate(opts: AggregateOptions<T>): Promise<{ value: number | string | boolean | null }>;
  /** Inserts 1..500 records in one transaction (all or nothing). */
  bulk(records: WritableFields<T>[]): Promise<T[]>;
  /** Runs 1..100 operations in order in one transaction (all or nothing). */
  batch(operations: BatchOperation<T>[]): Promise<{ results: BatchResult<T>[] }>;
}

export function createCollectionApi<T extends object>(t: Transport, name: string): CollectionApi<T> {
  const base = `/${encodeURIComponent(name)}`;
  const one = (id: string) => `${base}/${encodeURIComponent(id)}`;
  const api: CollectionApi<T> = {
    name,
    list: (opts) => t.request("GET", base, { query: listQuery(opts) }),
    async *iterate(opts = {}) {
      let after: string | null = null;
      do {
        const page: ListResult<T> = await api.list({ ...opts, after });
        yield* page.items;
        after = page.next_cursor;
      } while (after);
    },
    get: (id, opts) => t.request("GET", one(id), { query: getQuery(opts) }),
    create: (data) => t.request("POST", base, { body: data }),
    update: (id, data, opts) => t.request("PATCH", one(id), { body: data, ...ifMatchHeaders(opts) }),
    delete: (id, opts) => t.request("DELETE", one(id), ifMatchHeaders(opts)),
    restore: (id, opts) => t.request("POST", `${one(id)}/restore`, ifMatchHeaders(opts)),
    count: async (opts) => (await t.request<{ total: number }>("GET", `${base}/count`, { query: matchQuery(opts) })).total,
    aggregate: ((opts: AggregateOptions<T>) => t.request("GET", `${base}/aggregate`, { query: aggregateQuery(opts) })) as CollectionApi<T>["aggregate"],
    bulk: (records) => t.request("POST", `${base}/bulk`, { body: records }),
    batch: (operations) => t.request("POST", `${base}/batch`, { body: { operations } }),
  };
  return api;
}
