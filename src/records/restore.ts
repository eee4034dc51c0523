import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { recordNotFound, recordOpAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { relationEffects } from "./cascade.ts";
import { restoreRecordRow } from "./store.ts";
import { checkIfMatch, type IfMatch } from "./version.ts";

/**
 * `POST /:collection/:id/restore` (delete rule applies): clears `_deleted_at`; an active record is a no-op.
 * With `ifMatch`, 412 unless the record is at a version it names.
 */
export async function restoreRecord(ctx: AppContext, name: string, id: string, p: Principal, opts: { ifMatch?: IfMatch } = {}): Promise<RecordJson> {
  const opened = await openCollection(ctx, name);
  prepareRules(opened.catalog);
  const access = recordOpAccess(opened.col, "delete", p);
  return await inTransaction(ctx, async () => {
    const h = await openCollection(ctx, name);
    const record = await fetchRecord(ctx, h.col, id);
    if (!record) throw recordNotFound();
    prepareRules(h.catalog);
    await checkRecordAccess(ctx, h.col, "delete", p, access, record);
    const guard = checkIfMatch(opts.ifMatch, record);
    if (record._deleted_at === null) return (await attachRelationFields(ctx, h, [record], p))[0];
    return restoreRecordRow(ctx, h, record, p, relationEffects, { guard });
  });
}
