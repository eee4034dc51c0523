import type { Principal } from "../auth/principal.ts";
import { catalogView } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { OPERATIONS } from "../collections/types.ts";
import type { AppContext } from "../context.ts";
import { readRuleUsers } from "../users/rule-users.ts";
import { ruleUserOf, setRuleUser } from "./access.ts";
import { ruleCatalog } from "./expr/catalog.ts";
import { checkedRuleOf, isExpressionRule, ruleFor } from "./expr/rule.ts";

// What applying expression rules needs before the synchronous checks of rules/access.ts can run: every
// expression rule of the catalog checked against it (once per catalog load), and the caller's user as stored
// now (once per request). Nothing is read when no collection has an expression rule.

/** Catalog loads (their maps by name) whose expression rules are all checked, and whether they have any. */
const prepared = new WeakMap<Map<string, Collection>, boolean>();

function hasExpression(col: Collection): boolean {
  return OPERATIONS.some((op) => isExpressionRule(col.rules[op]));
}

/**
 * Prepares the expression rules for one request of `p` on `col` (a catalog entry the request resolved):
 * checks the catalog's rules where not done yet, and binds the caller's roles and metadata as stored now to
 * `p`, which must be this request's own principal object (a user principal is made per request).
 */
export function prepareRules(ctx: AppContext, p: Principal, col?: Collection): Promise<void> | undefined {
  if (p.kind === "admin") return;
  const any = prepared.get(catalogView(ctx).byName);
  // An entry the request resolved from a load other than the current one (reloaded meanwhile) is checked too.
  const unchecked = !!col && OPERATIONS.some((op) => isExpressionRule(col.rules[op]) && !checkedRuleOf(col, op));
  // Nothing to wait for (most requests: no expression rule anywhere, or all ready): no promise.
  if (any === false && !unchecked) return;
  if (any && !unchecked && (p.kind !== "user" || ruleUserOf(p) !== undefined)) return;
  return prepare(ctx, p, col, any, unchecked);
}

async function prepare(ctx: AppContext, p: Principal, col: Collection | undefined, any: boolean | undefined, unchecked: boolean): Promise<void> {
  if (any === undefined || unchecked) {
    const catalog = await ruleCatalog(ctx);
    any = false;
    const cols = [...catalog.collections()];
    if (col) cols.push(col);
    for (const c of cols) {
      if (!hasExpression(c)) continue;
      any = true;
      for (const op of OPERATIONS) if (isExpressionRule(c.rules[op])) ruleFor(catalog, c, op);
    }
    prepared.set(catalogView(ctx).byName, any);
  }
  if (any && p.kind === "user" && ruleUserOf(p) === undefined) await bindRuleUsers(ctx, [p]);
}

/** Binds to each user principal among `ps` their user as stored now (one query): for a realtime batch, whose readers are made per batch. */
export async function bindRuleUsers(ctx: AppContext, ps: readonly Principal[]): Promise<void> {
  const users = ps.filter((p): p is Extract<Principal, { kind: "user" }> => p.kind === "user");
  if (!users.length) return;
  const found = await readRuleUsers(ctx, [...new Set(users.map((p) => p.userId))]);
  for (const p of users) {
    // A user who is gone reads with their id alone (no roles, no metadata).
    setRuleUser(p, found.get(p.userId) ?? { id: p.userId, email: null, verified: false, roles: [], metadata: {} });
  }
}
