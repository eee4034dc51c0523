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

/** The data API of one collection. `T` is the record type (e.g. from `baas types`). */
export interface CollectionApi<T extends object = BaasRecord> {
  readonly name: string;
  /** One page of records (offset mode, or cursor mode with `after`). */
  list(opts?: ListOptions<T>): Promise<ListResult<T>>;
  /** Every matching record, page after page by cursor (`limit` is the page size). */
  iterate(opts?: Omit<ListOptions<T>, "after" | "cursor" | "page">): AsyncGenerator<T, void, undefined>;
  get(id: string, opts?: GetOptions<T>): Promise<T>;
  create(data: WritableFields<T>): Promise<T>;
  /** Changes the fields given (`null` clears one); answers the whole record. */
  update(id: string, data: WritableFields<T>): Promise<T>;
  /** Soft delete: answers the record with `_deleted_at` set. */
  delete(id: string): Promise<T>;
  restore(id: string): Promise<T>;
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
    update: (id, data) => t.request("PATCH", one(id), { body: data }),
    delete: (id) => t.request("DELETE", one(id)),
    restore: (id) => t.request("POST", `${one(id)}/restore`),
    count: async (opts) => (await t.request<{ total: number }>("GET", `${base}/count`, { query: matchQuery(opts) })).total,
    aggregate: ((opts: AggregateOptions<T>) => t.request("GET", `${base}/aggregate`, { query: aggregateQuery(opts) })) as CollectionApi<T>["aggregate"],
    bulk: (records) => t.request("POST", `${base}/bulk`, { body: records }),
    batch: (operations) => t.request("POST", `${base}/batch`, { body: { operations } }),
  };
  return api;
}
