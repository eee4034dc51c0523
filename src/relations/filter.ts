import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { q } from "../collections/ddl.ts";
import { badRequest } from "../errors.ts";
import type { FilterCond } from "../query/parse.ts";
import type { FilterExtension, Where } from "../query/sql.ts";
import { junctionTable, relationLookup, type Relation } from "./catalog.ts";
import { readFilter } from "./read-filter.ts";

const MAX_IN_VALUES = 500;

/**
 * Filters on the virtual relation fields (CONTRACT §6): for a many_via field, `eq:<id>` means
 * "linked to <id>", `ne:<id>` "not linked to", `in:a,b` "linked to any of", `eq:null` "linked
 * to nothing", `ne:null` "linked to something"; a many field reads the same over the active
 * records that point back and that the requester may read (as the field reads). Other operators
 * are 400. Each is one correlated EXISTS subquery. The relations are read once here; the
 * returned filter is synchronous, as the planner calls it.
 */
export async function relationFilter(ctx: AppContext): Promise<FilterExtension> {
  const relationOf = await relationLookup(ctx);
  return (ctx, col, cond, table, p) => {
    const rel = relationOf(col.name, cond.field);
    return rel && rel.type !== "one" ? relationCondition(ctx, rel, cond, table, p) : undefined;
  };
}

function relationCondition(ctx: AppContext, rel: Relation, cond: FilterCond, table: string, p: Principal): Where {
  let source: string;
  let target: string;
  // Bound values of `source`, repeated wherever `source` appears in the condition.
  let bound: string[] = [];
  if (rel.type === "many_via") {
    source = `${q(junctionTable(rel))} AS j WHERE j."from_id" = ${table}."_id"`;
    target = `j."to_id"`;
  } else {
    // The catalog was brought up to date when the relations were read.
    const to = ctx.catalog.byName.get(rel.to_col.toLowerCase());
    const field = rel.to_field ? to?.fieldMap.get(rel.to_field.toLowerCase()) : undefined;
    // TRUE/FALSE, not 1/0: PostgreSQL takes no integer as a condition.
    if (!to || !field) return { sql: cond.op === "ne" ? "TRUE" : "FALSE", params: [] };
    // SECURITY: only target records the requester may read count, else a filter would reveal
    // which records have hidden children (the field itself lists only readable ones).
    const visible = readFilter(to, p, "r.") ?? { sql: "FALSE", params: [] };
    source = `${q(to.name)} AS r WHERE r.${q(field.name)} = ${table}."_id" AND ${visible.sql}`;
    bound = visible.params;
    target = `r."_id"`;
  }
  const any = `EXISTS (SELECT 1 FROM ${source})`;
  const isNull = cond.value === "null";
  switch (cond.op) {
    case "eq":
      return isNull
        ? { sql: `NOT ${any}`, params: bound }
        : { sql: `EXISTS (SELECT 1 FROM ${source} AND ${target} = ?)`, params: [...bound, cond.value] };
    case "ne":
      return isNull
        ? { sql: any, params: bound }
        : { sql: `NOT EXISTS (SELECT 1 FROM ${source} AND ${target} = ?)`, params: [...bound, cond.value] };
    case "in": {
      const items = cond.value.split(",").filter((v) => v !== "null");
      if (items.length > MAX_IN_VALUES) throw badRequest(`"in" takes at most ${MAX_IN_VALUES} values`);
      const none = cond.value.split(",").length > items.length;
      const parts: string[] = [];
      const params: string[] = [];
      if (items.length) {
        parts.push(`EXISTS (SELECT 1 FROM ${source} AND ${target} IN (${items.map(() => "?").join(", ")}))`);
        params.push(...bound, ...items);
      }
      if (none) {
        parts.push(`NOT ${any}`);
        params.push(...bound);
      }
      return { sql: parts.length > 1 ? `(${parts.join(" OR ")})` : parts[0], params };
    }
    default:
      throw badRequest(`"${cond.field}" is a ${rel.type} relation field: filter it with eq, ne or in`);
  }
}
