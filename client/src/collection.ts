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
  /** Creates a record; `files` uploads files into file fields (`{ cover: blob }`, `{ photos: [a, b] }`). */
  create(data: WritableFields<T>, opts?: FileOptions): Promise<T>;
  /**
   * Changes the fields given (`null` clears one); answers the whole record. `files` replaces a file field's files
   * (`{ cover: blob }`), appends with `field+` (`{ "photos+": [blob] }`), removes by name with `field-`
   * (`{ "photos-": ["abc123defg_a.png"] }`). `ifMatch`: only if the record is still at that version.
   */
  update(id: string, data: WritableFields<T>, opts?: FileOptions & WriteOptions): Promise<T>;
  /**
   * The URL of a file of a record (the field's file, or `name` among its files), or null when it has none.
   * `thumb` (`"100x100"`, `"0x300"`) asks for a thumbnail of an image; `token` (from `fileToken()`) lets an
   * `<img src>` pass a read rule that needs a user; `download` makes it an attachment.
   */
  fileUrl(record: T, field: FieldName<T> & string, opts?: { name?: string; thumb?: string; token?: string; download?: boolean }): string | null;
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

/** Files to upload with a create or update: a file field's name (or `field+` / `field-`) → files (or names to remove). */
export interface FileOptions {
  files?: Record<string, Blob | Blob[] | string | string[]>;
}

/** A write body: JSON, or with files multipart/form-data (strings as they are, other values as JSON). */
function writeBody(data: object, opts?: FileOptions): unknown {
  if (!opts?.files || !Object.keys(opts.files).length) return data;
  const form = new FormData();
  for (const [k, v] of Object.entries(data)) if (v !== undefined) form.append(k, typeof v === "string" ? v : JSON.stringify(v));
  for (const [k, v] of Object.entries(opts.files))
    for (const item of Array.isArray(v) ? v : [v]) {
      if (typeof item === "string") form.append(k, item);
      else form.append(k, item, (item as { name?: string }).name || "file");
    }
  return form;
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
    create: (data, opts) => t.request("POST", base, { body: writeBody(data, opts) }),
    update: (id, data, opts) => t.request("PATCH", one(id), { body: writeBody(data, opts), ...ifMatchHeaders(opts) }),
    fileUrl(record, field, opts = {}) {
      const r = record as Record<string, unknown>;
      const v = r[field];
      const names = typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
      const file = opts.name !== undefined ? names.find((n) => n === opts.name) : names[0];
      if (file === undefined || typeof r._id !== "string") return null;
      const q = new URLSearchParams();
      if (opts.thumb) q.set("thumb", opts.thumb);
      if (opts.token) q.set("token", opts.token);
      if (opts.download) q.set("download", "1");
      const query = q.toString();
      return `${t.baseUrl}/files/${encodeURIComponent(name)}/${encodeURIComponent(r._id)}/${encodeURIComponent(file)}${query ? `?${query}` : ""}`;
    },
    delete: (id, opts) => t.request("DELETE", one(id), ifMatchHeaders(opts)),
    restore: (id, opts) => t.request("POST", `${one(id)}/restore`, ifMatchHeaders(opts)),
    count: async (opts) => (await t.request<{ total: number }>("GET", `${base}/count`, { query: matchQuery(opts) })).total,
    aggregate: ((opts: AggregateOptions<T>) => t.request("GET", `${base}/aggregate`, { query: aggregateQuery(opts) })) as CollectionApi<T>["aggregate"],
    bulk: (records) => t.request("POST", `${base}/bulk`, { body: records }),
    batch: (operations) => t.request("POST", `${base}/batch`, { body: { operations } }),
  };
  return api;
}
