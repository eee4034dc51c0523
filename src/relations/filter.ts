import type { Principal } from "../principal.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { CatalogSnapshot } from "../catalog/snapshot.ts";
import { junctionTable, type Relation } from "../catalog/types.ts";
import type { Cond } from "../db/condition.ts";
import type { FilterCond } from "../query/parse.ts";
import { linkCondition, readFilter, type LinkSource } from "../query/relations.ts";

/**
 * Filters on the virtual relation fields (CONTRACT §6), the FilterExtension every read hands the planner:
 * for a many_via field, `eq:<id>` means "linked to <id>", `ne:<id>` "not linked to", `in:a,b` "linked to any
 * of", `eq:null` "linked to nothing", `ne:null` "linked to something"; a many field reads the same over the
 * active records that point back and that the requester may read (as the field reads). Other operators are
 * 400. Each is one correlated EXISTS subquery (query/relations.ts). Undefined for any other field.
 */
export function relationCondition(h: CollectionHandle, cond: FilterCond, table: string, p: Principal): Cond | undefined {
  const rel = h.catalog.relationOf(h.name, cond.field);
  return rel && rel.type !== "one" ? linkCondition(linkSource(h.catalog, rel, p), cond, table, rel.type) : undefined;
}

/** Where the links of a many or many_via field are; null when the many field's target or field is gone. */
function linkSource(catalog: CatalogSnapshot, rel: Relation, p: Principal): LinkSource | null {
  if (rel.type === "many_via") return { junction: junctionTable(rel) };
  const to = catalog.get(rel.to_col);
  const field = rel.to_field ? to?.fieldMap.get(rel.to_field.toLowerCase()) : undefined;
  if (!to || !field) return null;
  // SECURITY: only target records the requester may read count, else a filter would reveal
  // which records have hidden children (the field itself lists only readable ones).
  return { target: to.name, field: field.name, visible: readFilter(to, p, "r.") };
}
