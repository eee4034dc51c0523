import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { badRequest, bodyOf, type Checked } from "../errors.ts";
import { parseListQuery, type ListOptions, type ListQuery } from "../query/parse.ts";
import { cursorValues, listColumns, pageRows } from "../query/read.ts";
import { decodeRow, type RecordJson } from "../query/rows.ts";
import { keysetPhases, orderBySql, orderTerms, planRead, runRead, type ReadPlan, type Where } from "../query/sql.ts";
import { finishRelations, parseExpand, relationProjection } from "../relations/expand.ts";
import { relationCondition } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { countPlan } from "./count.ts";
import { remembered } from "./read-cache.ts";

export interface Page {
  items: RecordJson[];
  next_cursor: string | null;
  total: number | null;
}

/** The rows of a page, decoded, and the cursor of the next one. */
async function readPage(ctx: AppContext, h: CollectionHandle, lq: ListQuery, plan: ReadPlan, select: string): Promise<Omit<Page, "total">> {
  const col = h.col;
  const terms = orderTerms(col, plan, lq.sort);
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
    return { items, next_cursor: more ? (items[items.length - 1]._id as string) : null };
  });
}

/** The total of a list query: null in cursor mode and when not asked. */
const totalOf = (ctx: AppContext, h: CollectionHandle, lq: ListQuery, plan: ReadPlan) => (lq.after === null && lq.total ? countPlan(ctx, plan, h.col.name) : null);

/** Runs a parsed list query on a collection the caller may read (access already decided). */
export async function runListQuery(ctx: AppContext, h: CollectionHandle, lq: ListQuery, access: ReturnType<typeof checkAccess>, p: Principal): Promise<Page> {
  const plan = planRead(ctx, h, lq, access, p, relationCondition);
  const { items, next_cursor } = await readPage(ctx, h, lq, plan, listColumns(h.col, lq.fields));
  return { items, next_cursor, total: await totalOf(ctx, h, lq, plan) };
}

/** What `listRecords` needs before reading: the collection, the parsed query, and what relations add. */
async function openList(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ListOptions>) {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const access = checkAccess(h.col, "read", p);
  const lq = parseListQuery(params, bodyOf(opts));
  const expand = parseExpand(h, params.getAll("expand"));
  const projection = relationProjection(h, lq.fields, expand);
  return { h, access, lq: { ...lq, fields: projection.fields }, expand, projection };
}

/**
 * `GET /:collection`: a page of records in offset or cursor mode (SPEC 4.2, CONTRACT §4). `params`
 * is read by the query language; `opts` holds the scalar parameters the route's schema checked.
 */
export async function listRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ListOptions>): Promise<Page> {
  return await fullPage(ctx, await openList(ctx, name, params, p, opts), p);
}

/** The page of an opened list with what relations add (relation fields, `expand`). */
async function fullPage(ctx: AppContext, { h, access, lq, expand, projection }: Awaited<ReturnType<typeof openList>>, p: Principal): Promise<Page> {
  const page = await runListQuery(ctx, h, lq, access, p);
  if (h.from.length) await finishRelations(ctx, h, page.items, projection, expand, p);
  return page;
}

/**
 * `listRecords` as the JSON text of the page, for the HTTP answer. A collection without relations keeps the
 * text of its items: the same page asked again, of an unchanged collection under the same scope (the read
 * plan's statement and values), is answered without reading or encoding the rows again (see read-cache.ts).
 */
export async function listRecordsJson(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ListOptions>): Promise<string> {
  const opened = await openList(ctx, name, params, p, opts);
  const { h, access, lq } = opened;
  if (h.from.length) return JSON.stringify(await fullPage(ctx, opened, p));
  const plan = planRead(ctx, h, lq, access, p, relationCondition);
  const select = listColumns(h.col, lq.fields);
  const key = `page\0${lq.limit}\0${lq.page}\0${JSON.stringify(lq.after)}\0${JSON.stringify(lq.sort)}\0${select}`;
  const page = await remembered(
    ctx,
    plan,
    h.col.name,
    key,
    async () => {
      const { items, next_cursor } = await readPage(ctx, h, lq, plan, select);
      return { items: JSON.stringify(items), next_cursor: JSON.stringify(next_cursor) };
    },
    (t) => t.items.length,
  );
  const total = await totalOf(ctx, h, lq, plan);
  return `{"items":${page.items},"next_cursor":${page.next_cursor},"total":${total === null ? "null" : total}}`;
}
