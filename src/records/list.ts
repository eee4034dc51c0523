import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { SYSTEM_FIELDS, type Collection } from "../collections/types.ts";
import { badRequest, bodyOf, type Checked } from "../errors.ts";
import { parseListQuery, type ListOptions, type ListQuery } from "../query/parse.ts";
import {
  column,
  keysetPhases,
  orderBySql,
  orderTerms,
  planRead,
  resolveField,
  runRead,
  type OrderTerm,
  type ReadPlan,
  type SqlValue,
  type Where,
} from "../query/sql.ts";
import { finishRelations, parseExpand, relationProjection } from "../relations/expand.ts";
import { relationFilter } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { decodeRow, type RecordJson } from "./codec.ts";
import { countPlan } from "./count.ts";

export interface Page {
  items: RecordJson[];
  next_cursor: string | null;
  total: number | null;
}

/** The full SELECT list of each catalog entry (entries are replaced, never changed, on a schema change). */
const fullSelect = new WeakMap<Collection, string>();

/** The SELECT list of a list: every field, or `_id` plus the `fields` selection. */
function selectList(col: Collection, fields: string[] | null): string {
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

/**
 * The values of the ORDER BY terms on the cursor row; 400 when the requester cannot see such a
 * record (or, when ranking, it does not match).
 */
async function cursorValues(ctx: AppContext, plan: ReadPlan, terms: OrderTerm[], after: string): Promise<SqlValue[]> {
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

/** Runs a parsed list query on a collection the caller may read (access already decided). */
export async function runListQuery(ctx: AppContext, col: Collection, lq: ListQuery, access: ReturnType<typeof checkAccess>, p: Principal): Promise<Page> {
  const plan = planRead(ctx, col, lq, access, p, await relationFilter(ctx));
  const terms = orderTerms(col, plan, lq.sort);
  const select = selectList(col, lq.fields);
  const order = orderBySql(plan, terms);
  const page = async (where: Where, limit: number, offset: number) =>
    await ctx.db.all<Record<string, unknown>>(`SELECT ${select} FROM ${plan.from.sql} WHERE ${where.sql} ORDER BY ${order} LIMIT ?${offset ? " OFFSET ?" : ""}`, [...plan.from.params, ...where.params, limit, ...(offset ? [offset] : [])]);
  return await runRead(plan, async () => {
    let rows: Record<string, unknown>[] = [];
    if (lq.after === null) rows = await page(plan.where, lq.limit + 1, (lq.page - 1) * lq.limit);
    else {
      if (lq.after.length > 64) throw badRequest("invalid cursor: no record with that id in this listing");
      const values = await cursorValues(ctx, plan, terms, lq.after);
      for (const phase of keysetPhases(plan, terms, values, lq.after)) {
        const need = lq.limit + 1 - rows.length;
        if (need <= 0) break;
        const where = { sql: `${plan.where.sql} AND ${phase.sql}`, params: [...plan.where.params, ...phase.params] };
        rows.push(...await page(where, need, 0));
      }
    }
    const more = rows.length > lq.limit;
    if (more) rows.pop();
    const items = col.fields.some((f) => f.type === "boolean" || f.type === "json") ? rows.map((r) => decodeRow(col, r)) : rows;
    const total = lq.after === null && lq.total ? await countPlan(ctx, plan, col.name) : null;
    return { items, next_cursor: more ? (items[items.length - 1]._id as string) : null, total };
  });
}

/**
 * `GET /:collection`: a page of records in offset or cursor mode (SPEC 4.2, CONTRACT §4). `params`
 * is read by the query language; `opts` holds the scalar parameters the route's schema checked.
 */
export async function listRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ListOptions>): Promise<Page> {
  const col = await requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  const lq = parseListQuery(params, bodyOf(opts));
  const expand = await parseExpand(ctx, col, params.getAll("expand"));
  const projection = await relationProjection(ctx, col, lq.fields, expand);
  const page = await runListQuery(ctx, col, { ...lq, fields: projection.fields }, access, p);
  await finishRelations(ctx, col, page.items, projection, expand, p);
  return page;
}
