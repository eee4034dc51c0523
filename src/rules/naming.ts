import type { AppContext } from "../context.ts";
import { ruleCatalog } from "./expr/catalog.ts";
import { rulesNamingField, type RuleUse } from "./expr/names.ts";

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
