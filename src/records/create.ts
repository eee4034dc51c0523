import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../db/tx.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { hasHooks } from "../hooks/run.ts";
import type { RecordJson } from "../query/rows.ts";
import { checkAccess } from "../rules/access.ts";
import { insertRecord } from "./store.ts";

/**
 * `POST /:collection`: checks the create rule, then inserts one record in its own transaction. Without
 * create hooks (user code, which might act outside the database) the insert may share its database
 * transaction with other creates and run again alone if one of them fails (PostgreSQL's group commit).
 */
export async function createRecord(ctx: AppContext, name: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> {
  const col = await requireCollection(ctx, name);
  checkAccess(col, "create", p);
  const data = bodyOf(body);
  return await inTransaction(ctx, () => insertRecord(ctx, col, data, p), { group: !hasHooks(ctx, col, "beforeCreate", "afterCreate") });
}
