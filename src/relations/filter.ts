import type { Principal } from "../auth/principal.ts";
import { catalogView } from "../collections/catalog.ts";
import type { AppContext } from "../context.ts";
import { linkCondition, readFilter, type LinkSource } from "../query/relations.ts";
import type { FilterExtension } from "../query/sql.ts";
import { junctionTable, relationLookup, type Relation } from "./catalog.ts";

/**
 * Filters on the virtual relation fields (CONTRACT §6): for a many_via field, `eq:<id>` means
 * "linked to <id>", `ne:<id>` "not linked to", `in:a,b` "linked to any of", `eq:null` "linked
 * to nothing", `ne:null` "linked to something"; a many field reads the same over the active
 * records that point back and that the requester may read (as the field reads). Other operators
 * are 400. Each is one correlated EXISTS subquery (query/relations.ts). The relations are read
 * once here; the returned filter is synchronous, as the planner calls it.
 */
export async function relationFilter(ctx: AppContext): Promise<FilterExtension> {
  const relationOf = await relationLookup(ctx);
  return (ctx, col, cond, table, p) => {
    const rel = relationOf(col.name, cond.field);
    return rel && rel.type !== "one" ? linkCondition(linkSource(ctx, rel, p), cond, table, rel.type) : undefined;
  };
}

/** Where the links of a many or many_via field are; null when the many field's target or field is gone. */
function linkSource(ctx: AppContext, rel: Relation, p: Principal): LinkSource | null {
  if (rel.type === "many_via") return { junction: junctionTable(rel) };
  // The catalog was brought up to date when the relations were read.
  const to = catalogView(ctx).byName.get(rel.to_col.toLowerCase());
  const field = rel.to_field ? to?.fieldMap.get(rel.to_field.toLowerCase()) : undefined;
  if (!to || !field) return null;
  // SECURITY: only target records the requester may read count, else a filter would reveal
  // which records have hidden children (the field itself lists only readable ones).
  return { target: to.name, field: field.name, visible: readFilter(to, p, "r.") };
}
