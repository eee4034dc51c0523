import type { AppContext } from "../context.ts";
import { q } from "../db/ident.ts";
import { junctionTable } from "../catalog/types.ts";
import type { RelationWrite } from "../relations/check.ts";

// The record store's writes of many_via junction rows (`from_id`, `to_id`, `pos`). Only store.ts
// imports this file: links change with the records that hold them, through the store.

/**
 * One link a relation's cascade adds or removes for a holder (see store.ts's relinkRecord). An added link
 * comes with the order of all the holder's links after it (`order`, which lists it).
 */
export type LinkChange = { junction: string; remove: string } | { junction: string; add: string; order: readonly string[] };

/**
 * Applies a LinkChange to `holderId`'s links; adding a link it already has does nothing. After an add every
 * link's position is its index in `order`: no two share one, so both engines read them back in that order.
 */
export async function changeLink(ctx: AppContext, holderId: string, change: LinkChange): Promise<void> {
  const j = q(change.junction);
  if ("remove" in change) {
    await ctx.db.run(`DELETE FROM ${j} WHERE "from_id" = ? AND "to_id" = ?`, [holderId, change.remove]);
    return;
  }
  const { add, order } = change;
  await ctx.db.run(`INSERT INTO ${j} ("from_id", "to_id", "pos") VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, [holderId, add, order.indexOf(add)]);
  for (let i = 0; i < order.length; i++)
    await ctx.db.run(`UPDATE ${j} SET "pos" = ? WHERE "from_id" = ? AND "to_id" = ? AND "pos" <> ?`, [i, holderId, order[i]!, i]);
}

/** Removes every link held by `holderId`. */
export async function dropLinksFrom(ctx: AppContext, junction: string, holderId: string): Promise<void> {
  await ctx.db.run(`DELETE FROM ${q(junction)} WHERE "from_id" = ?`, [holderId]);
}

/** Removes every link to `id`, whoever holds it. */
export async function dropLinksTo(ctx: AppContext, junction: string, id: string): Promise<void> {
  await ctx.db.run(`DELETE FROM ${q(junction)} WHERE "to_id" = ?`, [id]);
}

/** Replaces the junction rows of each many_via field the body set, for one record. */
export async function writeLinks(ctx: AppContext, write: RelationWrite, recordId: string): Promise<void> {
  for (const { rel, ids } of write.links) {
    const junction = junctionTable(rel);
    await dropLinksFrom(ctx, junction, recordId);
    const insert = `INSERT INTO ${q(junction)} ("from_id", "to_id", "pos") VALUES (?, ?, ?)`;
    for (let i = 0; i < ids.length; i++) await ctx.db.run(insert, [recordId, ids[i]!, i]);
  }
}
