import type { AppContext } from "../context.ts";
import { SYSTEM_FIELDS, storedType, type Collection } from "../catalog/types.ts";
import { badRequest } from "../errors.ts";
import type { AggregateFn } from "./parse.ts";
import { column, resolveField, type FieldRef, type OrderTerm, type ReadPlan, type SqlValue, type Where } from "./sql.ts";

// The statements of list, count and aggregate over a read plan (query/sql.ts builds the plan).

/** The full SELECT list of each catalog entry (entries are replaced, never changed, on a schema change). */
const fullSelect = new WeakMap<Collection, string>();

/** The SELECT list of a list: every field, or `_id` plus the `fields` selection. */
export function listColumns(col: Collection, fields: string[] | null): string {
  if (fields === null) {
    let sql = fullSelect.get(col);
    if (sql === undefined) {
      sql = [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)].map((f) => column(col, f)).join(", ");
      fullSelect.set(col, sql);
    }
    return sql;
  }
  const names = new Set<string>(["_id"]);
  for (const f of fields) names.add(resolveField(col, f).name);
  return [...names].map((f) => column(col, f)).join(", ");
}

/** The rows of a plan meeting `where` (the plan's own where, or it and a cursor phase): `select` columns, in `order`. */
export async function pageRows(ctx: AppContext, plan: ReadPlan, select: string, order: string, where: Where, limit: number, offset: number): Promise<Record<string, unknown>[]> {
  return await ctx.db.all<Record<string, unknown>>(`SELECT ${select} FROM ${plan.from.sql} WHERE ${where.sql} ORDER BY ${order} LIMIT ?${offset ? " OFFSET ?" : ""}`, [...plan.from.params, ...where.params, limit, ...(offset ? [offset] : [])]);
}

/**
 * The values of the ORDER BY terms on the cursor row; 400 when the requester cannot see such a
 * record (or, when ranking, it does not match).
 */
export async function cursorValues(ctx: AppContext, plan: ReadPlan, terms: OrderTerm[], after: string): Promise<SqlValue[]> {
  const select = terms.length ? terms.map((t, i) => `${t.expr} AS "k${i}"`).join(", ") : "1 AS k";
  // SECURITY: the cursor row is read under the same visibility as the page (soft delete, owner
  // rule); else a hidden record's id would page from its position and leak its sort values.
  let sql = `SELECT ${select} FROM ${plan.table} WHERE ${plan.table}."_id" = ? AND ${plan.visible.sql}`;
  let params: SqlValue[] = [after, ...plan.visible.params];
  if (terms.some((t) => t.rank)) {
    // The rank of the cursor row exists only for this search: take it from the same match.
    const match = plan.search!.match;
    sql = `SELECT ${select} FROM ${plan.from.sql} WHERE ${plan.table}."_id" = ? AND ${plan.visible.sql} AND ${match.sql}`;
    params = [...plan.from.params, after, ...plan.visible.params, ...match.params];
  }
  const row = await ctx.db.get<Record<string, SqlValue>>(sql, [...params]);
  if (!row) throw badRequest("invalid cursor: no record with that id in this listing");
  return terms.map((_, i) => row[`k${i}`]);
}

/** COUNT(*) of the rows of a plan. */
export async function countRows(ctx: AppContext, plan: ReadPlan): Promise<number> {
  return (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${plan.from.sql} WHERE ${plan.where.sql}`, [...plan.from.params, ...plan.where.params]))!.n;
}

/** Whether the record `id` is among the rows of a plan. */
export async function planHasRecord(ctx: AppContext, plan: ReadPlan, id: string): Promise<boolean> {
  const sql = `SELECT 1 FROM ${plan.from.sql} WHERE ${plan.where.sql} AND ${plan.table}."_id" = ?`;
  return !!await ctx.db.get(sql, [...plan.from.params, ...plan.where.params, id]);
}

/**
 * For each plan of one collection (without a search), whether the record `id` is among its rows: one
 * statement for all of them, each plan's conditions one column of it (realtime asks the filters of
 * every topic on an event this way). False for all when the record is gone.
 */
export async function plansHoldRecord(ctx: AppContext, plans: readonly ReadPlan[], id: string): Promise<boolean[]> {
  if (!plans.length) return [];
  const table = plans[0].table;
  const select = plans.map((p, i) => `CASE WHEN (${p.where.sql}) THEN 1 ELSE 0 END AS "m${i}"`).join(", ");
  const row = await ctx.db.get<Record<string, unknown>>(`SELECT ${select} FROM ${table} WHERE ${table}."_id" = ?`, [...plans.flatMap((p) => p.where.params), id]);
  return plans.map((_, i) => Number(row?.[`m${i}`] ?? 0) === 1);
}

/** The SQL of `fn` over `field` (null: every row, for count) of `col`: `sum` of nothing is 0, min and max of booleans compare 0 and 1. */
function aggregateExpr(ctx: AppContext, col: Collection, fn: AggregateFn, field: FieldRef | null): string {
  return ctx.db.sql.aggregate(fn, field ? column(col, field.name) : null, field ? storedType(field.type) : null);
}

/** `fn` of `field` over the rows of a plan, as stored (`sum` and `count` of nothing are 0, the others null). */
export async function aggregateValue(ctx: AppContext, plan: ReadPlan, col: Collection, fn: AggregateFn, field: FieldRef | null): Promise<SqlValue> {
  const expr = aggregateExpr(ctx, col, fn, field);
  return (await ctx.db.get<{ value: SqlValue }>(`SELECT ${expr} AS value FROM ${plan.from.sql} WHERE ${plan.where.sql}`, [...plan.from.params, ...plan.where.params]))!.value;
}

/** `fn` of `field` per value `g` of `group` over the rows of a plan: the first `limit` groups, ascending, null first. */
export async function aggregateGroups(
  ctx: AppContext,
  plan: ReadPlan,
  col: Collection,
  fn: AggregateFn,
  field: FieldRef | null,
  group: FieldRef,
  limit: number,
): Promise<{ g: SqlValue; value: SqlValue }[]> {
  const expr = aggregateExpr(ctx, col, fn, field);
  const g = column(col, group.name);
  return await ctx.db.all<{ g: SqlValue; value: SqlValue }>(`SELECT ${g} AS g, ${expr} AS value FROM ${plan.from.sql} WHERE ${plan.where.sql} GROUP BY ${g} ORDER BY ${ctx.db.sql.order(g, false)} LIMIT ?`, [...plan.from.params, ...plan.where.params, limit]);
}
