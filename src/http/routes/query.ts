import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { aggregateRecords } from "../../records/aggregate.ts";
import { countRecords } from "../../records/count.ts";
import { queryChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { principalOf } from "../request.ts";
import { AggregateBody, AggregateQuery, CountBody, MatchQuery } from "../schemas.ts";

const searchParams = (request: Request) => new URL(request.url).searchParams;
const tag = "records";
// The query language reads the rest (filters, search; fn, field and group_by of an aggregate).
const readOptions = queryChecker(MatchQuery, {}, { pick: ["include_deleted"], last: true });

/** `GET /api/v1/:collection/count` and `/aggregate`. */
export function queryRoutes(ctx: AppContext) {
  return new Elysia({ prefix: "/api/v1" })
    .get(
      "/:collection/count",
      async ({ request, params }) => {
        const q = searchParams(request);
        return countRecords(ctx, params.collection, q, await principalOf(ctx, request), readOptions.defer(q));
      },
      doc({ summary: "Count matching records", tag, access: "data", query: MatchQuery, ok: CountBody, errors: [400] }),
    )
    .get(
      "/:collection/aggregate",
      async ({ request, params }) => {
        const q = searchParams(request);
        return aggregateRecords(ctx, params.collection, q, await principalOf(ctx, request), readOptions.defer(q));
      },
      doc({ summary: "sum, avg, min, max or count, optionally grouped", tag, access: "data", query: AggregateQuery, ok: AggregateBody, errors: [400] }),
    );
}
