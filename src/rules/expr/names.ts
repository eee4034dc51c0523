import { OPERATIONS, type Operation } from "../../catalog/types.ts";
import type { RuleCatalog } from "./check.ts";
import { isExpressionRule, ruleFor } from "./rule.ts";

/** A rule that names a field: the collection it belongs to and its operation. */
export interface RuleUse {
  collection: string;
  op: Operation;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * The rules that name `collection.field`, in any collection: directly, through a relation path that passes
 * through it, inside an `@exists` over its collection, or as `@request.body.<field>`. Renaming or dropping such
 * a field is refused until the rules change (CONTRACT §12). A stored rule that no longer checks counts when its
 * text holds the field's name as a word (erring toward refusing).
 */
export function rulesNamingField(catalog: RuleCatalog, collection: string, field: string): RuleUse[] {
  const out: RuleUse[] = [];
  const word = new RegExp(`(^|[^A-Za-z0-9_])${field.replace(/[^A-Za-z0-9_]/g, "")}($|[^A-Za-z0-9_])`, "i");
  for (const col of catalog.collections()) {
    for (const op of OPERATIONS) {
      const value = col.rules[op];
      if (!isExpressionRule(value)) continue;
      const rule = ruleFor(catalog, col, op);
      const hit = rule.broken ? word.test(value as string) : rule.names.some((n) => same(n.collection, collection) && same(n.field, field));
      if (hit) out.push({ collection: col.name, op });
    }
  }
  return out;
}
