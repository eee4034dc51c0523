/** The system fields every record carries (times are Unix milliseconds). */
export interface SystemFields {
  _id: string;
  _created_at: number;
  _updated_at: number;
  _owner_id: string | null;
  _deleted_at: number | null;
}

/** A record of a collection without generated types: system fields plus any field. */
export interface BaasRecord extends SystemFields {
  [field: string]: unknown;
}

/** The user object of the session response and `GET /auth/me`. */
export interface User {
  id: string;
  email: string;
  is_verified: boolean;
  roles: string[];
  metadata: Record<string, unknown>;
  created_at: number;
}

/** `GET /auth/me/export`: the user and every active record they own, by collection. */
export interface OwnData {
  user: User;
  collections: Record<string, BaasRecord[]>;
}

/** `DELETE /auth/me`: how many owned records were deleted, by collection. */
export interface AccountDeleted {
  ok: true;
  deleted: Record<string, number>;
}

/** Register, login, refresh, magic-link and 2FA verify answer this. */
export interface Session {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: "Bearer";
  user: User;
}

/** A password login or magic link of a user with two-factor authentication: finish with `auth.verifyTotp`. */
export interface TotpRequired {
  totp_required: true;
  totp_token: string;
}

/** Field names of a record type, as strings. */
export type FieldName<T> = Extract<keyof T, string>;

/** The fields a client may write: everything but the system fields (`_…`), all optional. */
export type WritableFields<T> = { [K in keyof T as K extends `_${string}` ? never : K]?: T[K] };

export type FilterOperator = "eq" | "ne" | "gt" | "lt" | "gte" | "lte" | "like" | "in";
export type FilterScalar = string | number | boolean | null;

/**
 * Filters, ANDed. Object form: `{ status: "published" }` (eq), `{ views: { gte: 100 } }`,
 * `{ tag: ["a", "b"] }` or `{ tag: { in: ["a", "b"] } }` (in; values must not hold commas), `null` for SQL NULL.
 * String form: the server's own `field:op:value`, one string or several.
 */
export type Filter<T> =
  | string
  | readonly string[]
  | { [K in FieldName<T>]?: FilterScalar | readonly FilterScalar[] | { [O in FilterOperator]?: FilterScalar | readonly FilterScalar[] } };

/** A sort key: `field` or `field:asc` (ascending), `-field` or `field:desc` (descending). */
export type SortKey<T> = FieldName<T> | `-${FieldName<T>}` | `${FieldName<T>}:asc` | `${FieldName<T>}:desc`;

/** What list, count and aggregate share. */
export interface MatchOptions<T> {
  filter?: Filter<T>;
  /** Full-text query (needs the collection's full-text index). */
  search?: string;
  /** Include soft-deleted records. */
  include_deleted?: boolean;
}

/** Options of `get`. */
export interface GetOptions<T> {
  /** Only these fields (plus `_id`). */
  fields?: readonly FieldName<T>[];
  /** Relation fields whose records are embedded under `_expand`. */
  expand?: readonly FieldName<T>[];
  include_deleted?: boolean;
}

/** Options of `list`. */
export interface ListOptions<T> extends MatchOptions<T>, GetOptions<T> {
  sort?: SortKey<T> | readonly SortKey<T>[];
  /** 1..500, default 50. */
  limit?: number;
  /** 1-based page (offset mode). */
  page?: number;
  /** Cursor mode: the `next_cursor` of the previous page. */
  after?: string | null;
  /** Same as `after`. */
  cursor?: string | null;
  /** `false` skips counting in offset mode (`total` is null). */
  total?: false;
}

/** The answer of `list`. */
export interface ListResult<T> {
  items: T[];
  /** The last item's `_id` when more records follow: pass it as `after`. */
  next_cursor: string | null;
  /** Every match in offset mode; null in cursor mode. */
  total: number | null;
}

export type AggregateFunction = "sum" | "avg" | "min" | "max" | "count";

/** Options of `aggregate`. */
export interface AggregateOptions<T> extends MatchOptions<T> {
  fn: AggregateFunction;
  /** Required except for `count`. */
  field?: FieldName<T>;
  group_by?: FieldName<T>;
}

export interface AggregateGroup {
  group: unknown;
  value: number | string | boolean | null;
}

/** One operation of an atomic batch. */
export type BatchOperation<T> =
  | { op: "create"; data: WritableFields<T> }
  | { op: "update"; id: string; data: WritableFields<T> }
  | { op: "delete"; id: string };

export type BatchResult<T> = { op: "create"; record: T } | { op: "update"; record: T } | { op: "delete"; id: string };
