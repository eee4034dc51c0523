import { OPERATIONS, type Collection, type Operation } from "../collections/types.ts";

/** An access rule: the collection it belongs to and its operation. */
export interface RuleRef {
  collection: string;
  operation: Operation;
}

/** Rule values with a fixed meaning, which name no field of the record (`owner` is about `_owner_id`). */
const FIXED = new Set(["public", "authenticated", "owner", "disabled"]);

/**
 * The access rules, of any collection, whose expression names the field `field` of collection `collection`
 * (CONTRACT §12): renaming or dropping that field is refused (409) until they change. The fixed rule values and
 * `{ role }` name none.
 */
export function rulesNamingField(collections: readonly Collection[], collection: string, field: string): RuleRef[] {
  const out: RuleRef[] = [];
  for (const c of collections) {
    for (const operation of OPERATIONS) {
      const rule: unknown = c.rules[operation];
      if (typeof rule !== "string" || FIXED.has(rule)) continue;
      // An expression rule: not stored yet by this version (parseRuleValue takes only the fixed values).
      void collection;
      void field;
    }
  }
  return out;
}

/** How a 409 names the rules: `the read and update rules of "posts"`, or with their collections. */
export function describeRules(refs: readonly RuleRef[]): string {
  return refs.map((r) => `the ${r.operation} rule of "${r.collection}"`).join(", ");
}
