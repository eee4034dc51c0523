import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { lastKnownCollection, requireCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { lastKnownRelationsFrom } from "../relations/catalog.ts";
import type { TransactionOptions } from "../db/engine.ts";
import { inTransaction } from "../transaction.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { hasHooks } from "../hooks/run.ts";
import type { RecordJson } from "../query/rows.ts";
import { checkAccess } from "../rules/access.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkCreates } from "./access.ts";
import { insertRecord } from "./store.ts";

/**
 * How a create's transaction may run. Without create hooks (user code, which might act outside the
 * database) it may share its database transaction with other creates, and run again alone if one of them
 * fails (on SQLite, which groups every transaction, it then runs without a savepoint of its own). One
 * whose statements are the INSERT alone (and the catalog check): every field known as written (no column to add, no catalog row to write), a
 * collection without relations (no record to look up, no link to write), reads nothing another create
 * writes, so it may run beside them.
 */
function groupOptions(ctx: AppContext, col: Collection, data: Record<string, unknown>): TransactionOptions {
  if (hasHooks(ctx, col, "beforeCreate", "afterCreate")) return {};
  // As last known: asking the database here would cost a statement outside the transaction.
  const rels = lastKnownRelationsFrom(ctx, col.name);
  if (!rels || rels.length > 0) return { group: true };
  for (const k in data) if (col.fieldMap.get(k.toLowerCase())?.name !== k) return { group: true };
  return { group: true, independent: true };
}

/**
 * A grouped create, on an engine whose group begins after its members join (Engine.groupBeginsAfterJoin), when
 * the collection as last known lets `p` create: the catalog is checked in the group's transaction (whose
 * snapshot is taken after this request arrived, so it serves as the turn's check would), and the collection and
 * its rule are looked up again there. Else null.
 */
function groupedCreate(ctx: AppContext, name: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> | null {
  const known = lastKnownCollection(ctx, name);
  // An expression create rule is decided on the record in its own transaction (createRecord).
  if (!known || isExpressionRule(known.rules.create)) return null;
  let data: Record<string, unknown>;
  try {
    checkAccess(known, "create", p);
    data = bodyOf(body);
  } catch {
    return null; // answered by the usual path, on a checked catalog (a missing collection before a bad body)
  }
  const opts = groupOptions(ctx, known, data);
  if (!opts.group) return null;
  return inTransaction(
    ctx,
    async () => {
      const col = await requireCollection(ctx, name);
      checkAccess(col, "create", p);
      return await insertRecord(ctx, col, data, p);
    },
    opts,
  );
}

/** `POST /:collection`: checks the create rule, then inserts one record in its own transaction (see groupOptions). */
export async function createRecord(ctx: AppContext, name: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> {
  if (ctx.db.groupBeginsAfterJoin) {
    const grouped = groupedCreate(ctx, name, body, p);
    if (grouped) return await grouped;
  }
  const col = await requireCollection(ctx, name);
  const ready = prepareRules(ctx, p, col);
  if (ready) await ready;
  // The rule before the body (a caller who may not create learns nothing from how its body is answered); an
  // expression is checked with the body, which it may name (`@request.body`).
  const expression = isExpressionRule(col.rules.create);
  if (!expression) checkAccess(col, "create", p);
  const data = bodyOf(body);
  if (expression)
    return await inTransaction(ctx, async () => {
      await checkCreates(ctx, col, p, [data]);
      return await insertRecord(ctx, col, data, p);
    });
  return await inTransaction(ctx, async () => insertRecord(ctx, col, data, p), groupOptions(ctx, col, data));
}
