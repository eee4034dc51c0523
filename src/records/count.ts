import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { parseReadQuery, type ReadOptions } from "../query/parse.ts";
import { countRows } from "../query/read.ts";
import { planRead, runRead, type ReadPlan } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { remembered } from "./read-cache.ts";

/** COUNT(*) over a read plan; a count of the same plan on an unchanged collection is answered from memory. */
export async function countPlan(ctx: AppContext, plan: ReadPlan, collection: string): Promise<number> {
  return await remembered(ctx, plan, collection, "count", () => runRead(ctx, plan, () => countRows(ctx, plan)));
}

/** `GET /:collection/count`: how many records match `filter`/`search`, honouring the read rule. */
export async function countRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ReadOptions>): Promise<{ total: number }> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const access = checkAccess(h.col, "read", p);
  return { total: await countPlan(ctx, planRead(ctx, h, parseReadQuery(params, bodyOf(opts)), access, p, relationCondition), h.name) };
}
