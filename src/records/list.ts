import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { SYSTEM_FIELDS, type Collection } from "../collections/types.ts";
import { badRequest } from "../errors.ts";
import { parseListQuery, type ListQuery } from "../query/parse.ts";
import { column, keysetWhere, orderBySql, orderTerms, planRead, resolveField, runRead, type OrderTerm, type ReadPlan, type SqlValue } from "../query/sql.ts";
import { finishRelations, parseExpand, relationProjection } from "../relations/expand.ts";
import { checkAccess } from "../rules/access.ts";
import { decodeRow, type RecordJson } from "./codec.ts";
import { countPlan } from "./count.ts";

export interface Page {
  items: RecordJson[];
  next_cursor: string | null;
  total: number | null;
}

/** The columns a list returns: every field, or `_id` plus the `fields` selection. */
function selectedFields(col: Collection, fields: string[] | null): string[] {
  if (fields === null) return [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)];
  const names = new Set<string>(["_id"]);
  for (const f of fields) names.add(resolveField(col, f).name);
  return [...names];
}

/** The values of the ORDER BY terms on the cursor row; 400 when no such record (or, when ranking, no match). */
function cursorValues(ctx: AppContext, plan: ReadPlan, terms: OrderTerm[], after: string): SqlValue[] {
  const select = terms.length ? terms.map((t, i) => `${t.expr} AS "k${i}"`).join(", ") : "1 AS k";
  let sql = `SELECT ${select} FROM ${plan.table} WHERE ${plan.table}."_id" = ?`;
  let params: SqlValue[] = [after];
  if (terms.some((t) => t.rank)) {
    // The rank of the cursor row exists only for this search: take it from the same MATCH.
    sql = `SELECT ${select} FROM ${plan.from} WHERE ${plan.table}."_id" = ? AND ${plan.fts} MATCH ?`;
    params = [after, plan.match];
  }
  const row = ctx.sqlite.query<Record<string, SqlValue>, SqlValue[]>(sql).get(...params);
  if (!row) throw badRequest("invalid cursor: no record with that id in this listing");
  return terms.map((_, i) => row[`k${i}`]);
}

/** Runs a parsed list query on a collection the caller may read (access already decided). */
export function runListQuery(ctx: AppContext, col: Collection, lq: ListQuery, access: ReturnType<typeof checkAccess>, p: Principal): Page {
  const plan = planRead(ctx, col, lq, access, p);
  const terms = orderTerms(col, plan, lq.sort);
  const select = selectedFields(col, lq.fields)
    .map((f) => column(col, f))
    .join(", ");
  return runRead(plan, () => {
    let where = plan.where;
    if (lq.after !== null) {
      if (lq.after.length > 64) throw badRequest("invalid cursor: no record with that id in this listing");
      const values = cursorValues(ctx, plan, terms, lq.after);
      const ks = keysetWhere(plan, terms, values, lq.after);
      where = { sql: `${where.sql} AND ${ks.sql}`, params: [...where.params, ...ks.params] };
    }
    let sql = `SELECT ${select} FROM ${plan.from} WHERE ${where.sql} ORDER BY ${orderBySql(plan, terms)} LIMIT ?`;
    const args: SqlValue[] = [...where.params, lq.limit + 1];
    if (lq.after === null && lq.page > 1) {
      sql += " OFFSET ?";
      args.push((lq.page - 1) * lq.limit);
    }
    const rows = ctx.sqlite.query<Record<string, unknown>, SqlValue[]>(sql).all(...args);
    const more = rows.length > lq.limit;
    if (more) rows.pop();
    const items = rows.map((r) => decodeRow(col, r));
    let total: number | null = null;
    if (lq.after === null) total = countPlan(ctx, plan);
    return { items, next_cursor: more ? (items[items.length - 1]._id as string) : null, total };
  });
}

/** `GET /:collection`: a page of records in offset or cursor mode (SPEC 4.2, CONTRACT §4). */
export function listRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal): Page {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  const lq = parseListQuery(params);
  const expand = parseExpand(ctx, col, params.getAll("expand"));
  const projection = relationProjection(ctx, col, lq.fields, expand);
  const page = runListQuery(ctx, col, { ...lq, fields: projection.fields }, access, p);
  finishRelations(ctx, col, page.items, projection, expand, p);
  return page;
}
