import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { aggregateRecords } from "../../records/aggregate.ts";
import { countRecords } from "../../records/count.ts";
import { principalOf } from "../request.ts";

const searchParams = (request: Request) => new URL(request.url).searchParams;

/** `GET /api/v1/:collection/count` and `/aggregate`. */
export function queryRoutes(ctx: AppContext) {
  return new Elysia({ prefix: "/api/v1" })
    .get("/:collection/count", async ({ request, params }) =>
      countRecords(ctx, params.collection, searchParams(request), await principalOf(ctx, request)),
    )
    .get("/:collection/aggregate", async ({ request, params }) =>
      aggregateRecords(ctx, params.collection, searchParams(request), await principalOf(ctx, request)),
    );
}
