import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { FieldType } from "../catalog/types.ts";
import { badRequest, bodyOf, type Checked } from "../errors.ts";
import { parseAggregateQuery, type ReadOptions } from "../query/parse.ts";
import { aggregateGroups, aggregateValue } from "../query/read.ts";
import { planRead, resolveField, runRead, type SqlValue } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";

/** Most groups one `group_by` answer carries; more is 400 (an anonymous client could ask for millions). */
export const MAX_GROUPS = 1000;

export type AggregateResult = { value: unknown } | { groups: { group: unknown; value: unknown }[] };

/** A stored value back as JSON by its field's type. */
function decodeValue(type: FieldType, v: SqlValue): unknown {
  if (v === null) return null;
  if (type === "boolean") return v === 1;
  if (type === "json" && typeof v === "string") {
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }
  return v;
}

/**
 * `GET /:collection/aggregate`: `fn` of `field` over the matching records, optionally per
 * `group_by` value (groups ascending, at most MAX_GROUPS). `sum`/`count` of nothing are 0, the others null.
 */
export async function aggregateRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ReadOptions>): Promise<AggregateResult> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const col = h.col;
  const access = checkAccess(col, "read", p);
  const aq = parseAggregateQuery(params, bodyOf(opts));
  const field = aq.field === null ? null : resolveField(col, aq.field);
  const group = aq.groupBy === null ? null : resolveField(col, aq.groupBy);
  const plan = planRead(ctx, h, aq, access, p, relationCondition);
  if ((aq.fn === "sum" || aq.fn === "avg") && field!.type !== "number")
    throw badRequest(`${aq.fn} needs a number field: "${field!.name}" is ${field!.type}`);
  const valueType: FieldType = aq.fn === "min" || aq.fn === "max" ? field!.type : "number";
  return await runRead(ctx, plan, async () => {
    if (!group) return { value: decodeValue(valueType, await aggregateValue(ctx, plan, col, aq.fn, field)) };
    const rows = await aggregateGroups(ctx, plan, col, aq.fn, field, group, MAX_GROUPS + 1);
    if (rows.length > MAX_GROUPS)
      throw badRequest(
        `group_by "${group.name}" gives more than ${MAX_GROUPS} groups: narrow the records with a filter (or search) first`,
      );
    return { groups: rows.map((r) => ({ group: decodeValue(group.type, r.g), value: decodeValue(valueType, r.value) })) };
  });
}
