import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { inTransaction } from "../transaction.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { checkAccess, recordNotFound, recordOpAccess } from "../rules/access.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkRecordAccess } from "./access.ts";
import { updateRecordRow } from "./store.ts";
import { checkIfMatch, type IfMatch } from "./version.ts";

/** `PATCH /:collection/:id`: only the given fields change; `null` clears a field. With `ifMatch`, 412 unless the record is at a version it names. */
export async function updateRecord(
  ctx: AppContext,
  name: string,
  id: string,
  body: Checked<Record<string, unknown>>,
  p: Principal,
  opts: { ifMatch?: IfMatch } = {},
): Promise<RecordJson> {
  const opened = await openCollection(ctx, name);
  prepareRules(opened.catalog);
  // The rule before the body, unless it is an expression, which may name the body (`@request.body`).
  const expression = isExpressionRule(opened.col.rules.update);
  const fixed = expression ? null : checkAccess(opened.col, "update", p);
  const data = bodyOf(body);
  const access = fixed ?? recordOpAccess(opened.col, "update", p, data);
  return await inTransaction(ctx, async () => {
    const h = await openCollection(ctx, name);
    const previous = await fetchRecord(ctx, h.col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    prepareRules(h.catalog);
    await checkRecordAccess(ctx, h.col, "update", p, access, previous);
    return updateRecordRow(ctx, h, previous, data, p, { guard: checkIfMatch(opts.ifMatch, previous) });
  });
}
