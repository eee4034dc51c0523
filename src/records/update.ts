import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { updateRecordRow } from "./store.ts";

/** `PATCH /:collection/:id`: only the given fields change; `null` clears a field. */
export async function updateRecord(ctx: AppContext, name: string, id: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> {
  const col = await requireCollection(ctx, name);
  await prepareRules(ctx, p, col);
  // The rule before the body, unless it is an expression, which may name the body (`@request.body`).
  let access = isExpressionRule(col.rules.update) ? null : checkAccess(col, "update", p);
  const data = bodyOf(body);
  access ??= checkAccess(col, "update", p, data);
  return await inTransaction(ctx, async () => {
    const previous = await fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    await checkRecordAccess(ctx, col, "update", p, access, previous);
    return updateRecordRow(ctx, col, previous, data, p);
  });
}
