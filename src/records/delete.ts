import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { q } from "../collections/ddl.ts";
import type { Collection } from "../collections/types.ts";
import { inTransaction } from "../db/tx.ts";
import { hookAuth, runHooks } from "../hooks/run.ts";
import { onRecordDelete } from "../relations/on-delete.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { checkRecordAccess } from "./access.ts";
import { fetchRecord, type RecordJson } from "./codec.ts";

/** `DELETE /:collection/:id`: soft delete; returns the record with `_deleted_at` set. */
export function deleteRecord(ctx: AppContext, name: string, id: string, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "delete", p);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    checkRecordAccess(col, "delete", p, access, previous);
    return softDeleteRecord(ctx, col, previous, p);
  });
}

/** Soft-deletes a fetched active record inside the caller's transaction (delete and batch). */
export function softDeleteRecord(ctx: AppContext, col: Collection, previous: RecordJson, p: Principal): RecordJson {
  const event = { collection: col.name, op: "delete" as const, data: null, record: previous, previous, auth: hookAuth(p) };
  runHooks(ctx, col, "beforeDelete", event);
  const now = ctx.clock.now();
  ctx.sqlite.query(`UPDATE ${q(col.name)} SET "_deleted_at" = ? WHERE "_id" = ?`).run(now, previous._id as string);
  onRecordDelete(ctx, col, previous, "soft", p);
  const record = fetchRecord(ctx, col, previous._id as string)!;
  attachRelationFields(ctx, col, [record], p);
  runHooks(ctx, col, "afterDelete", { ...event, record });
  return record;
}

/** Admin hard delete of an active or soft-deleted record: `{ ok: true, id }`. */
export function hardDeleteRecord(ctx: AppContext, name: string, id: string, p: Principal): { ok: true; id: string } {
  const col = requireCollection(ctx, name);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous) throw recordNotFound();
    removeRecord(ctx, col, previous, p);
    return { ok: true as const, id };
  });
}

/** Hard-deletes a fetched record inside the caller's transaction (admin delete and relation cascades). */
export function removeRecord(ctx: AppContext, col: Collection, previous: RecordJson, p: Principal): void {
  const event = { collection: col.name, op: "delete" as const, data: null, record: previous, previous, auth: hookAuth(p) };
  runHooks(ctx, col, "beforeDelete", event);
  ctx.sqlite.query(`DELETE FROM ${q(col.name)} WHERE "_id" = ?`).run(previous._id as string);
  onRecordDelete(ctx, col, previous, "hard", p);
  runHooks(ctx, col, "afterDelete", event);
}
