import { Elysia, t } from "elysia";
import type { AppContext } from "../../context.ts";
import { runBatch } from "../../records/batch.ts";
import { bulkCreate } from "../../records/bulk.ts";
import { readJson } from "../body.ts";
import { doc } from "../doc.ts";
import { principalOf } from "../request.ts";
import { BatchBody, BatchResult, BulkBody, RecordBody } from "../schemas.ts";

const tag = "records";

/** Multi-record writes of the data API: `POST /api/v1/:collection/bulk` and `/batch`. */
export function recordWriteRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .post(
      "/:collection/bulk",
      async ({ request, params, set }) => {
        const p = await principalOf(ctx, request);
        const body = await readJson(request, max);
        const records = await bulkCreate(ctx, params.collection, body, p);
        set.status = 201;
        return records;
      },
      doc({ summary: "Insert 1..500 records in one transaction", tag, access: "data", body: BulkBody, ok: t.Array(RecordBody), status: 201, errors: [409, 422] }),
    )
    .post(
      "/:collection/batch",
      async ({ request, params }) => {
        const p = await principalOf(ctx, request);
        return runBatch(ctx, params.collection, await readJson(request, max), p);
      },
      doc({ summary: "Run 1..100 create/update/delete operations atomically", tag, access: "data", body: BatchBody, ok: BatchResult }),
    );
}
