import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { lastKnownHandle, openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
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
function groupOptions(h: CollectionHandle, data: Record<string, unknown>): TransactionOptions {
  if (hasHooks(h.hooks, "beforeCreate", "afterCreate")) return {};
  if (h.from.length > 0) return { group: true };
  const fields = h.col.fieldMap;
  for (const k in data) if (fields.get(k.toLowerCase())?.name !== k) return { group: true };
  return { group: true, independent: true };
}

/**
 * A grouped create, on an engine whose group begins after its members join (Engine.groupBeginsAfterJoin), when
 * the collection as last known lets `p` create: the catalog is checked in the group's transaction (whose
 * snapshot is taken after this request arrived, so it serves as the turn's check would), and the collection and
 * its rule are looked up again there. Else null.
 */
function groupedCreate(ctx: AppContext, name: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> | null {
  // As last known: asking the database here would cost a statement outside the transaction.
  const known = lastKnownHandle(ctx, name);
  // An expression create rule is decided on the record in its own transaction (createRecord).
  if (!known || isExpressionRule(known.col.rules.create)) return null;
  let data: Record<string, unknown>;
  try {
    checkAccess(known.col, "create", p);
    data = bodyOf(body);
  } catch {
    return null; // answered by the usual path, on a checked catalog (a missing collection before a bad body)
  }
  const opts = groupOptions(known, data);
  if (!opts.group) return null;
  return inTransaction(
    ctx,
    async () => {
      const h = await openCollection(ctx, name);
      // SECURITY: the rule as the transaction reads it; another node may have made it an expression meanwhile,
      // which is decided on the record (checkAccess alone passes one that depends on the record's fields).
      if (isExpressionRule(h.col.rules.create)) {
        prepareRules(h.catalog);
        await checkCreates(ctx, h.col, p, [data]);
      } else checkAccess(h.col, "create", p);
      return await insertRecord(ctx, h, data, p);
    },
    opts,
  );
}

/**
 * `POST /:collection`: checks the create rule, then inserts one record in its own transaction (see
 * groupOptions), with the collection resolved again at the transaction's start.
 */
export async function createRecord(ctx: AppContext, name: string, body: Checked<Record<string, unknown>>, p: Principal): Promise<RecordJson> {
  if (ctx.db.groupBeginsAfterJoin) {
    const grouped = groupedCreate(ctx, name, body, p);
    if (grouped) return await grouped;
  }
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  // The rule before the body (a caller who may not create learns nothing from how its body is answered); an
  // expression is checked with the body, which it may name (`@request.body`).
  const expression = isExpressionRule(h.col.rules.create);
  if (!expression) checkAccess(h.col, "create", p);
  const data = bodyOf(body);
  if (expression)
    return await inTransaction(ctx, async () => {
      const current = await openCollection(ctx, name);
      prepareRules(current.catalog);
      await checkCreates(ctx, current.col, p, [data]);
      return await insertRecord(ctx, current, data, p);
    });
  return await inTransaction(ctx, async () => insertRecord(ctx, await openCollection(ctx, name), data, p), groupOptions(h, data));
}
