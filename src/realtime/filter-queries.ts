import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { plansHoldRecord } from "../query/read.ts";
import { planRead, type ReadPlan } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import type { FilterQuery } from "./match.ts";

/** Conditions asked of one statement at most: the statement holds one column per different condition. */
const CONDITIONS_PER_STATEMENT = 50;

/**
 * The filter conditions that the topics of one event leave to the database, each asked for one reader
 * (a `many` condition counts only the related records that reader may read). Equal ones are added once.
 */
export class FilterAsks {
  private readonly asks = new Map<string, { query: FilterQuery; reader: Principal }>();

  get size(): number {
    return this.asks.size;
  }

  /** Adds `query` as `reader` asks it; the key of its answer. */
  add(query: FilterQuery, reader: Principal, readerKey: string): string {
    const key = `${readerKey}\u0000${query.key}`;
    if (!this.asks.has(key)) this.asks.set(key, { query, reader });
    return key;
  }

  /**
   * Whether the record `id` of `h` meets each condition, by key: one statement for all of them (per
   * CONDITIONS_PER_STATEMENT), whatever the number of topics and streams; conditions that are spelled
   * the same for different readers are asked once. A condition whose field or relation has gone since
   * its topic was set matches nothing.
   */
  async answer(ctx: AppContext, h: CollectionHandle, id: string): Promise<Map<string, boolean>> {
    const answers = new Map<string, boolean>();
    const plans: ReadPlan[] = [];
    const planOf = new Map<string, number>();
    const keyPlan = new Map<string, number>();
    for (const [key, { query, reader }] of this.asks) {
      let plan: ReadPlan;
      try {
        plan = planRead(ctx, h, { filters: query.filters, search: null, includeDeleted: true, anyDeleted: true }, "all", reader, relationCondition);
      } catch {
        answers.set(key, false);
        continue;
      }
      const spelled = `${plan.where.sql}\u0000${JSON.stringify(plan.where.params)}`;
      let i = planOf.get(spelled);
      if (i === undefined) planOf.set(spelled, (i = plans.push(plan) - 1));
      keyPlan.set(key, i);
    }
    const held: boolean[] = [];
    for (let from = 0; from < plans.length; from += CONDITIONS_PER_STATEMENT)
      held.push(...(await plansHoldRecord(ctx, plans.slice(from, from + CONDITIONS_PER_STATEMENT), id)));
    for (const [key, i] of keyPlan) answers.set(key, held[i]);
    return answers;
  }
}
