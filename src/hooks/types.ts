import type { Principal } from "../principal.ts";
import type { ChangeEvent } from "../events/bus.ts";
import type { FnRoute } from "./routes.ts";

/** What `onCommit` receives: the change event of CONTRACT §10 (a hard delete is a `delete` of `{ _id }`, `hard: true`). */
export type CommitEvent = Omit<ChangeEvent, "action"> & { action: "create" | "update" | "delete" | "restore"; hard?: true };

/** The in-transaction handlers a hook file may export (CONTRACT §5). */
export const HOOK_NAMES = [
  "beforeCreate",
  "afterCreate",
  "beforeUpdate",
  "afterUpdate",
  "beforeDelete",
  "afterDelete",
  "beforeRestore",
  "afterRestore",
] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/**
 * What a hook handler receives (CONTRACT §5, §15). `data` is mutable in before* handlers (`_owner_id` included);
 * `tx` is a handle on the write's transaction (admin rights; nested hooks up to 3 deep).
 */
export interface HookEvent {
  collection: string;
  op: "create" | "update" | "delete" | "restore";
  data: Record<string, unknown> | null;
  record: Record<string, unknown> | null;
  previous: Record<string, unknown> | null;
  auth: { kind: Principal["kind"]; id: string | null; roles: string[] };
  tx?: Tx;
}

/** A hook handler: synchronous, or async (the write waits for it inside its transaction). */
export type HookHandler = (e: HookEvent) => void | Promise<void>;

export interface HookModule {
  collection: string;
  file?: string;
  beforeCreate?: HookHandler;
  afterCreate?: HookHandler;
  beforeUpdate?: HookHandler;
  afterUpdate?: HookHandler;
  beforeDelete?: HookHandler;
  afterDelete?: HookHandler;
  beforeRestore?: HookHandler;
  afterRestore?: HookHandler;
  /** Runs after the transaction commits, once per changed record; may be async; errors are logged. */
  onCommit?: (e: CommitEvent) => unknown;
}

export interface HookSet {
  list: HookModule[];
  /** Routes of the hook files, served under /api/v1/fn/ (CONTRACT §15). */
  routes?: FnRoute[];
}

/** A record as the data API answers it. */
export type TxRecord = Record<string, unknown>;

/** What `tx.list` takes: the data API's query language, as values instead of a query string. */
export interface TxListOptions {
  /** `field:op:value`, one or several (ANDed), as the `filter` parameter. */
  filter?: string | string[];
  /** `field`, `-field` or `field:desc`, one or several, as the `sort` parameter. */
  sort?: string | string[];
  /** 1..500, default 50. */
  limit?: number;
  /** The `_id` of the last record of the previous page (cursor paging). */
  after?: string;
  /** Soft-deleted records too. */
  include_deleted?: boolean;
}

/** The handle on the current transaction (CONTRACT §15). Every method acts with admin rights. */
export interface Tx {
  /** The record, or null when there is none (or it is soft-deleted). */
  get(collection: string, id: string): Promise<TxRecord | null>;
  /** A page of records (at most `limit`), as `GET /:collection` with these parameters answers its `items` (also as `.items`). */
  list(collection: string, opts?: TxListOptions): Promise<TxRecord[] & { readonly items: TxRecord[] }>;
  create(collection: string, data: Record<string, unknown>): Promise<TxRecord>;
  /** Only the given fields change; a missing record is 404. */
  update(collection: string, id: string, data: Record<string, unknown>): Promise<TxRecord>;
  /** Soft delete (as `DELETE /:collection/:id`); `{ hard: true }` removes the row (as the admin's hard delete). */
  delete(collection: string, id: string, opts?: { hard?: boolean }): Promise<TxRecord | { ok: true; id: string }>;
  /** How deep this handle is: 0 for a route handler's, n for a hook run by a write of a depth n-1 handle. */
  readonly depth: number;
}
