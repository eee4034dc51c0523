import { OPERATIONS, type Collection } from "../catalog/types.ts";
import type { CatalogSnapshot } from "../catalog/snapshot.ts";
import type { RuleCatalog } from "./expr/check.ts";
import { checkedRuleOf, isExpressionRule, ruleFor } from "./expr/rule.ts";

// The synchronous checks of rules/access.ts read each expression rule as checked against the catalog reading
// its collection entry belongs to: this checks every expression rule of a reading, once per reading (a reading
// never changes; a schema change is a new one, with new entries). Nothing is done for a reading without any.

/** Readings whose expression rules are all checked. */
const prepared = new WeakSet<CatalogSnapshot>();

/** A catalog reading as the rule checker reads it. */
function ruleCatalogOf(snap: CatalogSnapshot): RuleCatalog {
  return { collection: (name) => snap.get(name), relation: (c, f) => snap.relationOf(c, f), collections: () => snap.byName.values() };
}

function hasExpression(col: Collection): boolean {
  return OPERATIONS.some((op) => isExpressionRule(col.rules[op]));
}

/** Checks the expression rules of a catalog reading (the one a request's handle came from), once per reading. */
export function prepareRules(snap: CatalogSnapshot): void {
  if (prepared.has(snap)) return;
  let catalog: RuleCatalog | undefined;
  for (const col of snap.byName.values()) {
    if (!hasExpression(col)) continue;
    catalog ??= ruleCatalogOf(snap);
    for (const op of OPERATIONS) if (isExpressionRule(col.rules[op]) && !checkedRuleOf(col, op)) ruleFor(catalog, col, op);
  }
  prepared.add(snap);
}
