import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { relationEffects } from "./cascade.ts";
import { restoreRecordRow } from "./store.ts";

/** `POST /:collection/:id/restore` (delete rule applies): clears `_deleted_at`; an active record is a no-op. */
export async function restoreRecord(ctx: AppContext, name: string, id: string, p: Principal): Promise<RecordJson> {
  const col = await requireCollection(ctx, name);
  await prepareRules(ctx, p, col);
  const access = checkAccess(col, "delete", p);
  return await inTransaction(ctx, async () => {
    const record = await fetchRecord(ctx, col, id);
    if (!record) throw recordNotFound();
    await checkRecordAccess(ctx, col, "delete", p, access, record);
    if (record._deleted_at === null) return (await attachRelationFields(ctx, col, [record], p))[0];
    return restoreRecordRow(ctx, col, record, p, relationEffects);
  });
}
