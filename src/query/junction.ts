import type { AppContext } from "../context.ts";
import { listParam, type Bound } from "../db/condition.ts";
import { q } from "../db/ident.ts";
import type { Collection } from "../catalog/types.ts";
import { columnsOf, type TargetFilter } from "./relations.ts";

// The reads of many_via junction tables (`from_id`, `to_id`, `pos`: holder, linked record, position).
// `junction` is a junction table's name (relations/catalog.ts's junctionTable); the store writes them.

type Row = Record<string, unknown>;

/** The links of the holders `fromIds`, each holder's in link order. */
export async function linksFromAll(ctx: AppContext, junction: string, fromIds: string[]): Promise<{ from_id: string; to_id: string }[]> {
  return await ctx.db.all<{ from_id: string; to_id: string }>(`SELECT "from_id", "to_id" FROM ${q(junction)} WHERE "from_id" ${ctx.db.sql.inList} ORDER BY "from_id", "pos"`, [listParam(fromIds)]);
}

/** The ids one holder links to, in order. */
export async function linksFrom(ctx: AppContext, junction: string, holderId: string): Promise<{ to_id: string; pos: number }[]> {
  return await ctx.db.all<{ to_id: string; pos: number }>(`SELECT "to_id", "pos" FROM ${q(junction)} WHERE "from_id" = ? ORDER BY "pos"`, [holderId]);
}

/** The links to `id`, with their holders' positions, in no particular order. */
export async function linksTo(ctx: AppContext, junction: string, id: string): Promise<{ from_id: string; pos: number }[]> {
  return await ctx.db.all<{ from_id: string; pos: number }>(`SELECT "from_id", "pos" FROM ${q(junction)} WHERE "to_id" = ?`, [id]);
}

/** The holders that link to `id`, by id. */
export async function holdersOf(ctx: AppContext, junction: string, id: string): Promise<{ from_id: string }[]> {
  return await ctx.db.all<{ from_id: string }>(`SELECT "from_id" FROM ${q(junction)} WHERE "to_id" = ? ORDER BY "from_id"`, [id]);
}

/** How many active records of `holders` link to `id`. */
export async function countActiveHolders(ctx: AppContext, junction: string, holders: string, id: string): Promise<number> {
  return (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q(junction)} AS j JOIN ${q(holders)} AS f ON f."_id" = j."from_id" WHERE j."to_id" = ? AND f."_deleted_at" IS NULL`, [id]))!.n;
}

/**
 * The linked rows of `target` of the holders `fromIds` that meet `filter` (its columns prefixed
 * `t.`): the first `limit` of each holder in link order, each with its holder's id as `__rel_from`.
 */
export async function linkedRows(ctx: AppContext, junction: string, target: Collection, fromIds: string[], filter: TargetFilter, limit: number): Promise<Row[]> {
  const params: Bound[] = [listParam(fromIds)];
  const sql = `SELECT "__rel_from", ${columnsOf(target, "")} FROM (SELECT j."from_id" AS "__rel_from", j."pos" AS "__rel_pos", ${columnsOf(target, "t.")}, ROW_NUMBER() OVER (PARTITION BY j."from_id" ORDER BY j."pos") AS "__rel_n" FROM ${q(junction)} AS j JOIN ${q(target.name)} AS t ON t."_id" = j."to_id" WHERE j."from_id" ${ctx.db.sql.inList} AND ${ctx.db.sql.cond(filter, params)}) AS "__rel" WHERE "__rel_n" <= ? ORDER BY "__rel_from", "__rel_pos"`;
  params.push(limit);
  return await ctx.db.all<Row>(sql, params);
}
