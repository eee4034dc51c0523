import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { recordNotFound, recordOpAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { relationEffects } from "./cascade.ts";
import { removeRecord, softDeleteRecord } from "./store.ts";
import { checkIfMatch, type IfMatch } from "./version.ts";

/** `DELETE /:collection/:id`: soft delete; returns the record with `_deleted_at` set. With `ifMatch`, 412 unless the record is at a version it names. */
export async function deleteRecord(ctx: AppContext, name: string, id: string, p: Principal, opts: { ifMatch?: IfMatch } = {}): Promise<RecordJson> {
  const opened = await openCollection(ctx, name);
  prepareRules(opened.catalog);
  const access = recordOpAccess(opened.col, "delete", p);
  return await inTransaction(ctx, async () => {
    const h = await openCollection(ctx, name);
    const previous = await fetchRecord(ctx, h.col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    prepareRules(h.catalog);
    await checkRecordAccess(ctx, h.col, "delete", p, access, previous);
    return softDeleteRecord(ctx, h, previous, p, relationEffects, { guard: checkIfMatch(opts.ifMatch, previous) });
  });
}

/** Admin hard delete of an active or soft-deleted record: `{ ok: true, id }` (`ifMatch` as for a soft delete). */
export async function hardDeleteRecord(ctx: AppContext, name: string, id: string, p: Principal, opts: { ifMatch?: IfMatch } = {}): Promise<{ ok: true; id: string }> {
  await openCollection(ctx, name);
  return await inTransaction(ctx, async () => {
    const h = await openCollection(ctx, name);
    const previous = await fetchRecord(ctx, h.col, id);
    if (!previous) throw recordNotFound();
    await removeRecord(ctx, h, previous, p, relationEffects, { guard: checkIfMatch(opts.ifMatch, previous) });
    return { ok: true as const, id };
  });
}
