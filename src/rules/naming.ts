import type { AppContext } from "../context.ts";
import { OPERATIONS } from "../catalog/types.ts";
import { conflict } from "../errors.ts";
import { RuleError } from "./expr/ast.ts";
import { ruleCatalog } from "./expr/catalog.ts";
import type { RuleCatalog } from "./expr/check.ts";
import { rulesNamingField, type RuleUse } from "./expr/names.ts";
import { checkRuleValue, isExpressionRule } from "./expr/rule.ts";

/**
 * The access rules, of any collection, whose expression names the field `field` of collection `collection`
 * (CONTRACT §12): renaming or dropping that field is refused (409) until they change. The fixed rule values and
 * `{ role }` name none.
 */
export async function rulesNaming(ctx: AppContext, collection: string, field: string): Promise<RuleUse[]> {
  return rulesNamingField(await ruleCatalog(ctx), collection, field);
}

/** How a 409 names the rules: `the read and update rules of "posts"`, or with their collections. */
export function describeRules(refs: readonly RuleUse[]): string {
  return refs.map((r) => `the ${r.op} rule of "${r.collection}"`).join(", ");
}

/**
 * 409 when an expression rule of a collection in `after` (the catalog as a change would leave it: a relation or a
 * collection gone, a field of another type) would no longer check (CONTRACT §12: what a rule names is not dropped
 * or changed under it until the rule changes).
 * `change` says what was asked, for the message; `only`: the rules to check (by default every expression rule).
 */
export function refuseIfRulesBreak(after: RuleCatalog, change: string, only?: readonly RuleUse[]): void {
  const uses = only ?? [...after.collections()].flatMap((c) => OPERATIONS.filter((op) => isExpressionRule(c.rules[op])).map((op) => ({ collection: c.name, op })));
  for (const { collection, op } of uses) {
    const c = after.collection(collection);
    if (!c) continue;
    try {
      checkRuleValue(after, c, op, c.rules[op]);
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      throw conflict(`${change}: the ${op} rule of "${c.name}" would no longer hold (${err.message}); change the rule first`);
    }
  }
}
