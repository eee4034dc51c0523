import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { and, col, exists, FALSE, listParam, or, TRUE, val, type Bound, type Cond } from "../db/condition.ts";
import { q } from "../db/ident.ts";
import { SYSTEM_FIELDS, type Collection } from "../catalog/types.ts";
import { badRequest } from "../errors.ts";
import { checkAccess } from "../rules/access.ts";
import { compileRule } from "../rules/expr/compile.ts";
import type { FilterCond } from "./parse.ts";
import { MAX_IN_VALUES } from "./sql.ts";

// The reads of relations (expand, relation fields, relation checks, relation filters) over the rows of
// user collections. Callers pass catalog entries and validated names; client values are bound.

type Row = Record<string, unknown>;

/** A condition on a target collection's rows (see readFilter). */
export type TargetFilter = Cond;

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
  const qualifier = alias ? alias.slice(0, -1) : null;
  const deleted: Cond = { k: "null", a: col(qualifier, "_deleted_at", "integer"), not: false };
  if (access === "all") return deleted;
  if (access === "own") return and([deleted, { k: "cmp", op: "=", a: col(qualifier, "_owner_id", "text"), b: val(p.kind === "user" ? p.userId : "") }]);
  // SECURITY: an expression read rule on the target's rows, as every read of that collection applies it.
  return and([deleted, qualifier ? compileRule(access.rule, access.env, { table: qualifier }) : access.cond]);
}

/** `filter` in the engine's dialect, its values after `params`. */
function where(ctx: AppContext, filter: TargetFilter, params: Bound[]): string {
  return ctx.db.sql.cond(filter, params);
}

/** Every column of `col` (system fields first), each prefixed with `alias`. */
export function columnsOf(col: Collection, alias: string): string {
  return [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)].map((n) => `${alias}${q(n)}`).join(", ");
}

/** The `_id`s among `ids` of rows of `target` that meet `filter` (one query). */
export async function idsMeeting(ctx: AppContext, target: Collection, ids: string[], filter: TargetFilter): Promise<Set<string>> {
  const params: Bound[] = [listParam(ids)];
  const rows = await ctx.db.all<{ _id: string }>(`SELECT "_id" FROM ${q(target.name)} WHERE "_id" ${ctx.db.sql.inList} AND ${where(ctx, filter, params)}`, params);
  return new Set(rows.map((r) => r._id));
}

/** The full rows of `target` with those `_id`s that meet `filter`, undecoded, in no particular order. */
export async function rowsWithIds(ctx: AppContext, target: Collection, ids: string[], filter: TargetFilter): Promise<Row[]> {
  const params: Bound[] = [listParam(ids)];
  return await ctx.db.all<Row>(`SELECT ${columnsOf(target, "")} FROM ${q(target.name)} WHERE "_id" ${ctx.db.sql.inList} AND ${where(ctx, filter, params)}`, params);
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
  const params: Bound[] = [listParam(fromIds)];
  const sql = `SELECT "__rel_from", ${columns} FROM (SELECT ${f} AS "__rel_from", ${columns}, ROW_NUMBER() OVER (PARTITION BY ${f} ORDER BY "_id") AS "__rel_n" FROM ${q(target.name)} WHERE ${f} ${ctx.db.sql.inList} AND ${where(ctx, filter, params)}) AS "__rel" WHERE "__rel_n" <= ? ORDER BY "_id"`;
  params.push(limit);
  return await ctx.db.all<Row>(sql, params);
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
export function linkCondition(source: LinkSource | null, cond: FilterCond, table: string, type: string): Cond {
  if (!source) return cond.op === "ne" ? TRUE : FALSE;
  const id = col(table, "_id", "text");
  // The rows of the source linking the outer record (`linking`), and the linked record's id among them.
  let from: string;
  let alias: string;
  let linking: Cond;
  let target;
  if ("junction" in source) {
    from = source.junction;
    alias = "j";
    linking = { k: "cmp", op: "=", a: col(alias, "from_id", "text"), b: id };
    target = col(alias, "to_id", "text");
  } else {
    from = source.target;
    alias = "r";
    linking = and([{ k: "cmp", op: "=", a: col(alias, source.field, "text"), b: id }, source.visible ?? FALSE]);
    target = col(alias, "_id", "text");
  }
  const any = exists(from, alias, linking);
  const linkedTo = (c: Cond) => exists(from, alias, and([linking, c]));
  const isNull = cond.value === "null";
  switch (cond.op) {
    case "eq":
      return isNull ? { k: "not", c: any } : linkedTo({ k: "cmp", op: "=", a: target, b: val(cond.value) });
    case "ne":
      return isNull ? any : { k: "not", c: linkedTo({ k: "cmp", op: "=", a: target, b: val(cond.value) }) };
    case "in": {
      const items = cond.value.split(",").filter((v) => v !== "null");
      if (items.length > MAX_IN_VALUES) throw badRequest(`"in" takes at most ${MAX_IN_VALUES} values`);
      const none = cond.value.split(",").length > items.length;
      const parts: Cond[] = [];
      if (items.length) parts.push(linkedTo({ k: "in", a: target, values: items }));
      if (none) parts.push({ k: "not", c: any });
      return or(parts);
    }
    default:
      throw badRequest(`"${cond.field}" is a ${type} relation field: filter it with eq, ne or in`);
  }
}
