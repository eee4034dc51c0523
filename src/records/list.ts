import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { badRequest, bodyOf, type Checked } from "../errors.ts";
import { parseListQuery, type ListOptions, type ListQuery } from "../query/parse.ts";
import { cursorValues, listColumns, pageRows } from "../query/read.ts";
import { decodeRow, type RecordJson } from "../query/rows.ts";
import { keysetPhases, orderBySql, orderTerms, planRead, runRead, type Where } from "../query/sql.ts";
import { finishRelations, parseExpand, relationProjection } from "../relations/expand.ts";
import { relationCondition } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { countPlan } from "./count.ts";

export interface Page {
  items: RecordJson[];
  next_cursor: string | null;
  total: number | null;
}

/** Runs a parsed list query on a collection the caller may read (access already decided). */
export async function runListQuery(ctx: AppContext, h: CollectionHandle, lq: ListQuery, access: ReturnType<typeof checkAccess>, p: Principal): Promise<Page> {
  const col = h.col;
  const plan = planRead(ctx, h, lq, access, p, relationCondition);
  const terms = orderTerms(col, plan, lq.sort);
  const select = listColumns(col, lq.fields);
  const order = orderBySql(ctx, plan, terms);
  const page = (where: Where, limit: number, offset: number) => pageRows(ctx, plan, select, order, where, limit, offset);
  return await runRead(ctx, plan, async () => {
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
    const items = col.fields.some((f) => f.type === "boolean" || f.type === "json" || f.type === "file") ? rows.map((r) => decodeRow(col, r)) : rows;
    const total = lq.after === null && lq.total ? await countPlan(ctx, plan, col.name) : null;
    return { items, next_cursor: more ? (items[items.length - 1]._id as string) : null, total };
  });
}

/**
 * `GET /:collection`: a page of records in offset or cursor mode (SPEC 4.2, CONTRACT §4). `params`
 * is read by the query language; `opts` holds the scalar parameters the route's schema checked.
 */
export async function listRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ListOptions>): Promise<Page> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const access = checkAccess(h.col, "read", p);
  const lq = parseListQuery(params, bodyOf(opts));
  const expand = parseExpand(h, params.getAll("expand"));
  const projection = relationProjection(h, lq.fields, expand);
  const page = await runListQuery(ctx, h, { ...lq, fields: projection.fields }, access, p);
  if (h.from.length) await finishRelations(ctx, h, page.items, projection, expand, p);
  return page;
}
