import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { relationEffects } from "./cascade.ts";
import { removeRecord, softDeleteRecord } from "./store.ts";

/** `DELETE /:collection/:id`: soft delete; returns the record with `_deleted_at` set. */
export async function deleteRecord(ctx: AppContext, name: string, id: string, p: Principal): Promise<RecordJson> {
  const col = await requireCollection(ctx, name);
  await prepareRules(ctx, p, col);
  const access = checkAccess(col, "delete", p);
  return await inTransaction(ctx, async () => {
    const previous = await fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    await checkRecordAccess(ctx, col, "delete", p, access, previous);
    return softDeleteRecord(ctx, col, previous, p, relationEffects);
  });
}

/** Admin hard delete of an active or soft-deleted record: `{ ok: true, id }`. */
export async function hardDeleteRecord(ctx: AppContext, name: string, id: string, p: Principal): Promise<{ ok: true; id: string }> {
  const col = await requireCollection(ctx, name);
  return await inTransaction(ctx, async () => {
    const previous = await fetchRecord(ctx, col, id);
    if (!previous) throw recordNotFound();
    await removeRecord(ctx, col, previous, p, relationEffects);
    return { ok: true as const, id };
  });
}
