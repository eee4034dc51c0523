import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../db/tx.ts";
import { asObject } from "../errors.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { checkRecordAccess } from "./access.ts";
import { fetchRecord, type RecordJson } from "./codec.ts";
import { updateRecordRow } from "./store.ts";

/** `PATCH /:collection/:id`: only the given fields change; `null` clears a field. */
export function updateRecord(ctx: AppContext, name: string, id: string, body: unknown, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "update", p);
  const data = asObject(body);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    checkRecordAccess(col, "update", p, access, previous);
    return updateRecordRow(ctx, col, previous, data, p);
  });
}
