import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../db/tx.ts";
import { relationEffects } from "../relations/on-delete.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { checkRecordAccess } from "./access.ts";
import { fetchRecord, type RecordJson } from "./codec.ts";
import { removeRecord, softDeleteRecord } from "./store.ts";

/** `DELETE /:collection/:id`: soft delete; returns the record with `_deleted_at` set. */
export function deleteRecord(ctx: AppContext, name: string, id: string, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "delete", p);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    checkRecordAccess(col, "delete", p, access, previous);
    return softDeleteRecord(ctx, col, previous, p, relationEffects);
  });
}

/** Admin hard delete of an active or soft-deleted record: `{ ok: true, id }`. */
export function hardDeleteRecord(ctx: AppContext, name: string, id: string, p: Principal): { ok: true; id: string } {
  const col = requireCollection(ctx, name);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous) throw recordNotFound();
    removeRecord(ctx, col, previous, p, relationEffects);
    return { ok: true as const, id };
  });
}
