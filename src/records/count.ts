import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { parseReadQuery } from "../query/parse.ts";
import { planRead, runRead, type ReadPlan, type SqlValue } from "../query/sql.ts";
import { relationFilter } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";

/** COUNT(*) over a read plan. */
export function countPlan(ctx: AppContext, plan: ReadPlan): number {
  return runRead(plan, () =>
    ctx.sqlite
      .query<{ n: number }, SqlValue[]>(`SELECT COUNT(*) AS n FROM ${plan.from} WHERE ${plan.where.sql}`)
      .get(...plan.where.params)!.n,
  );
}

/** `GET /:collection/count`: how many records match `filter`/`search`, honouring the read rule. */
export function countRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal): { total: number } {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  return { total: countPlan(ctx, planRead(ctx, col, parseReadQuery(params), access, p, relationFilter)) };
}
