import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { inTransaction } from "../db/tx.ts";
import { asObject } from "../errors.ts";
import { checkAccess } from "../rules/access.ts";
import type { RecordJson } from "./codec.ts";
import { insertRecord } from "./store.ts";

/** `POST /:collection`: checks the create rule, then inserts one record in its own transaction. */
export function createRecord(ctx: AppContext, name: string, body: unknown, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  checkAccess(col, "create", p);
  const data = asObject(body);
  return inTransaction(ctx, () => insertRecord(ctx, col, data, p));
}
