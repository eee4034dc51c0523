import { AsyncLocalStorage } from "node:async_hooks";
import { ADMIN } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";
import { createRecord } from "./create.ts";
import { deleteRecord, hardDeleteRecord } from "./delete.ts";
import { listRecords } from "./list.ts";
import { getRecord } from "./read.ts";
import { updateRecord } from "./update.ts";
import { recordNotFound } from "../rules/access.ts";
import { inTransaction } from "../transaction.ts";
import type { Tx, TxListOptions, TxRecord } from "../hooks/types.ts";

export type { Tx, TxListOptions };

// The handle on the caller's transaction that route handlers (and, later, hooks) get as `tx` (CONTRACT §15).
// Each call is the data API's own service with admin rights: validation, relations, hooks and change events
// are theirs. Called inside the caller's `inTransaction`, each write is a savepoint of it: a failed call
// leaves nothing behind and can be caught; a throw out of the caller rolls back every call, and the change
// events go out only when the caller's transaction commits.

/** The deepest hooks may nest: a hook run by a write of a handle of this depth gets a handle that refuses every call. */
export const MAX_TX_DEPTH = 3;

const tooDeep = () =>
  new AppError(400, "hook_rejected", `hooks may nest at most ${MAX_TX_DEPTH} deep: a hook at depth ${MAX_TX_DEPTH + 1} may not use tx`);

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (!value || typeof value !== "object" || Array.isArray(value)) throw badRequest(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function name(value: unknown, what: string): string {
  if (typeof value !== "string" || !value) throw badRequest(`${what} must be a non-empty string`);
  return value;
}

/** The query string `tx.list`'s options stand for; a value of the wrong type is 400 as a bad parameter would be. */
function listParams(opts: TxListOptions | undefined): { params: URLSearchParams; limit?: number; include_deleted?: boolean } {
  const params = new URLSearchParams();
  if (opts === undefined || opts === null) return { params };
  const o = plainObject(opts, "tx.list options") as TxListOptions;
  for (const key of ["filter", "sort"] as const) {
    const v = o[key];
    if (v === undefined) continue;
    const list = Array.isArray(v) ? v : [v];
    for (const item of list) {
      if (typeof item !== "string") throw badRequest(`tx.list: ${key} must be a string or an array of strings`);
      params.append(key, item);
    }
  }
  if (o.after !== undefined) params.set("after", name(o.after, "tx.list: after"));
  if (o.limit !== undefined && (!Number.isInteger(o.limit) || o.limit < 1 || o.limit > 500))
    throw badRequest("tx.list: limit must be an integer from 1 to 500");
  if (o.include_deleted !== undefined && typeof o.include_deleted !== "boolean") throw badRequest("tx.list: include_deleted must be a boolean");
  return { params, limit: o.limit, include_deleted: o.include_deleted };
}

/**
 * A handle at `depth` on the transaction the caller runs in. Each call runs in `inTransaction` (a savepoint of
 * the caller's transaction, or a transaction of its own when there is none). A handle deeper than MAX_TX_DEPTH
 * refuses every call (400 `hook_rejected`), which rolls back the write whose hooks went that deep.
 */
export function createTx(ctx: AppContext, depth = 0): Tx {
  const call = <T>(fn: () => Promise<T>): Promise<T> => {
    if (depth > MAX_TX_DEPTH) return Promise.reject(tooDeep());
    // The hooks this call runs learn its depth (hookTx), however deep in the services they run.
    return callDepth.run(depth, () => inTransaction(ctx, fn));
  };
  return {
    depth,
    get: (collection, id) =>
      call(async () => {
        try {
          return await getRecord(ctx, name(collection, "tx.get: collection"), name(id, "tx.get: id"), ADMIN);
        } catch (err) {
          // A missing record is null; a missing collection stays an error (a mistyped name must show).
          if (err instanceof AppError && err.status === 404 && err.message === recordNotFound().message) return null;
          throw err;
        }
      }),
    list: (collection, opts) =>
      call(async () => {
        const { params, ...scalars } = listParams(opts);
        const page = await listRecords(ctx, name(collection, "tx.list: collection"), params, ADMIN, { ...scalars, total: false });
        // The records as an array, which also answers `.items` as the data API's page does (not enumerable: JSON
        // and spreading see the array alone), so code written either way reads the same records.
        return Object.defineProperty(page.items, "items", { value: page.items, enumerable: false }) as TxRecord[] & { readonly items: TxRecord[] };
      }),
    create: (collection, data) =>
      call(() => createRecord(ctx, name(collection, "tx.create: collection"), plainObject(data, "tx.create: data"), ADMIN)),
    update: (collection, id, data) =>
      call(() => updateRecord(ctx, name(collection, "tx.update: collection"), name(id, "tx.update: id"), plainObject(data, "tx.update: data"), ADMIN)),
    delete: (collection, id, opts) =>
      call(() => {
        const col = name(collection, "tx.delete: collection");
        const key = name(id, "tx.delete: id");
        return opts?.hard === true ? hardDeleteRecord(ctx, col, key, ADMIN) : deleteRecord(ctx, col, key, ADMIN);
      }),
  };
}

/** The handle a hook run by a write of `parent` gets: one level deeper. */
export function nestedTx(ctx: AppContext, parent: Tx): Tx {
  return createTx(ctx, parent.depth + 1);
}

/** The depth of the tx call running in this async context (none outside one). Not read on any path without tx. */
const callDepth = new AsyncLocalStorage<number>();

/**
 * The handle a hook that runs now gets: one level below the tx call whose write runs it, or depth 1 for a hook run
 * by a client's request. The store gives it to every lifecycle hook event (HookEvent.tx).
 */
export function hookTx(ctx: AppContext): Tx {
  return createTx(ctx, (callDepth.getStore() ?? 0) + 1);
}

/**
 * Runs `fn` with a handle on one transaction: whatever `fn` writes through it commits together when `fn`
 * returns, and nothing of it stays (no change event goes out) when `fn` throws.
 */
export async function withTx<T>(ctx: AppContext, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return await inTransaction(ctx, () => fn(createTx(ctx)));
}
