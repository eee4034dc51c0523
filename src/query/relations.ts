import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { q } from "../collections/ddl.ts";
import { SYSTEM_FIELDS, type Collection } from "../collections/types.ts";
import { badRequest } from "../errors.ts";
import { checkAccess } from "../rules/access.ts";
import { inList, listParam } from "./dialect.ts";
import type { FilterCond } from "./parse.ts";
import { MAX_IN_VALUES, type Where } from "./sql.ts";

// The reads of relations (expand, relation fields, relation checks, relation filters) over the rows of
// user collections. Callers pass catalog entries and validated names; client values are bound.

type Row = Record<string, unknown>;

/** A SQL condition on a target collection's rows, with its bound values. */
export interface TargetFilter {
  sql: string;
  params: string[];
}

/**
 * How the requester may read a relation's target collection: null when its read rule hides it
 * entirely, else the condition a row must meet (active, and owned under an `owner` rule).
 * `alias` prefixes the columns (e.g. "t.").
 */
export function readFilter(target: Collection, p: Principal, alias = ""): TargetFilter | null {
  let access;
  try {
    access = checkAccess(target, "read", p);
  } catch {
    return null;
  }
  const deleted = `${alias}"_deleted_at" IS NULL`;
  if (access === "all") return { sql: deleted, params: [] };
  return { sql: `${deleted} AND ${alias}"_owner_id" = ?`, params: [p.kind === "user" ? p.userId : ""] };
}

/** Every column of `col` (system fields first), each prefixed with `alias`. */
export function columnsOf(col: Collection, alias: string): string {
  return [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)].map((n) => `${alias}${q(n)}`).join(", ");
}

/** The `_id`s among `ids` of rows of `target` that meet `filter` (one query). */
export async function idsMeeting(ctx: AppContext, target: Collection, ids: string[], filter: TargetFilter): Promise<Set<string>> {
  const rows = await ctx.db.all<{ _id: string }>(`SELECT "_id" FROM ${q(target.name)} WHERE "_id" ${inList(ctx.db)} AND ${filter.sql}`, [listParam(ids), ...filter.params]);
  return new Set(rows.map((r) => r._id));
}

/** The full rows of `target` with those `_id`s that meet `filter`, undecoded, in no particular order. */
export async function rowsWithIds(ctx: AppContext, target: Collection, ids: string[], filter: TargetFilter): Promise<Row[]> {
  return await ctx.db.all<Row>(`SELECT ${columnsOf(target, "")} FROM ${q(target.name)} WHERE "_id" ${inList(ctx.db)} AND ${filter.sql}`, [listParam(ids), ...filter.params]);
}

/**
 * The rows of `target` whose `field` holds one of `fromIds` and that meet `filter`: the first `limit`
 * of each by `_id`, each with the id it points at as `__rel_from`. `full`: every column, else `_id` only.
 */
export async function pointingRows(
  ctx: AppContext,
  target: Collection,
  field: string,
  fromIds: string[],
  filter: TargetFilter,
  limit: number,
  full: boolean,
): Promise<Row[]> {
  const f = q(field);
  const columns = full ? columnsOf(target, "") : q("_id");
  return await ctx.db.all<Row>(`SELECT "__rel_from", ${columns} FROM (SELECT ${f} AS "__rel_from", ${columns}, ROW_NUMBER() OVER (PARTITION BY ${f} ORDER BY "_id") AS "__rel_n" FROM ${q(target.name)} WHERE ${f} ${inList(ctx.db)} AND ${filter.sql}) AS "__rel" WHERE "__rel_n" <= ? ORDER BY "_id"`, [listParam(fromIds), ...filter.params, limit]);
}

/** Where a relation filter looks for a record's links. */
export type LinkSource =
  /** A many_via field: the rows of its junction table. */
  | { junction: string }
  /** A many field: the rows of `target` whose `field` points back, among those `visible` lets the requester read (null: none). */
  | { target: string; field: string; visible: TargetFilter | null };

/**
 * A filter on a virtual relation field (CONTRACT §6) as one correlated EXISTS subquery on `source`:
 * `eq:<id>` "linked to <id>", `ne:<id>` "not linked to", `in:a,b` "linked to any of", `eq:null`
 * "linked to nothing", `ne:null` "linked to something"; other operators are 400. `table` is the
 * quoted collection table of the outer query; a null `source` (the target or its field is gone)
 * links to nothing. `type` names the relation's type in the 400.
 */
export function linkCondition(source: LinkSource | null, cond: FilterCond, table: string, type: string): Where {
  // TRUE/FALSE, not 1/0: PostgreSQL takes no integer as a condition.
  if (!source) return { sql: cond.op === "ne" ? "TRUE" : "FALSE", params: [] };
  let from: string;
  let target: string;
  // Bound values of `from`, repeated wherever `from` appears in the condition.
  let bound: string[] = [];
  if ("junction" in source) {
    from = `${q(source.junction)} AS j WHERE j."from_id" = ${table}."_id"`;
    target = `j."to_id"`;
  } else {
    const visible = source.visible ?? { sql: "FALSE", params: [] };
    from = `${q(source.target)} AS r WHERE r.${q(source.field)} = ${table}."_id" AND ${visible.sql}`;
    bound = visible.params;
    target = `r."_id"`;
  }
  const any = `EXISTS (SELECT 1 FROM ${from})`;
  const isNull = cond.value === "null";
  switch (cond.op) {
    case "eq":
      return isNull
        ? { sql: `NOT ${any}`, params: bound }
        : { sql: `EXISTS (SELECT 1 FROM ${from} AND ${target} = ?)`, params: [...bound, cond.value] };
    case "ne":
      return isNull
        ? { sql: any, params: bound }
        : { sql: `NOT EXISTS (SELECT 1 FROM ${from} AND ${target} = ?)`, params: [...bound, cond.value] };
    case "in": {
      const items = cond.value.split(",").filter((v) => v !== "null");
      if (items.length > MAX_IN_VALUES) throw badRequest(`"in" takes at most ${MAX_IN_VALUES} values`);
      const none = cond.value.split(",").length > items.length;
      const parts: string[] = [];
      const params: string[] = [];
      if (items.length) {
        parts.push(`EXISTS (SELECT 1 FROM ${from} AND ${target} IN (${items.map(() => "?").join(", ")}))`);
        params.push(...bound, ...items);
      }
      if (none) {
        parts.push(`NOT ${any}`);
        params.push(...bound);
      }
      return { sql: parts.length > 1 ? `(${parts.join(" OR ")})` : parts[0], params };
    }
    default:
      throw badRequest(`"${cond.field}" is a ${type} relation field: filter it with eq, ne or in`);
  }
}
