import { Elysia, t } from "elysia";
import type { AppContext } from "../../context.ts";
import { runBatch } from "../../records/batch.ts";
import { bulkCreate } from "../../records/bulk.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { principalOf } from "../request.ts";
import { BatchBody, BatchOperation, BatchResult, BulkBody, RecordBody } from "../schemas.ts";
import { MAX_BATCH } from "../../records/batch.ts";
import { MAX_BULK } from "../../records/bulk.ts";
import { idempotent } from "../idempotency.ts";
import { AppError, badRequest } from "../../errors.ts";

const tag = "records";

const bulkBody = bodyChecker(BulkBody, {
  "": ({ error }) =>
    Array.isArray(error.value) ? `a bulk insert takes 1 to ${MAX_BULK} records, got ${error.value.length}` : "the request body must be a JSON array of record objects",
  "#": ({ key }): AppError => badRequest(`record ${key} must be a JSON object`, { index: Number(key) }),
});
const batchBody = bodyChecker(BatchBody, {
  "": 'the request body must be { "operations": [...] }',
  operations: ({ error }) =>
    Array.isArray(error.value) ? `a batch takes 1 to ${MAX_BATCH} operations, got ${error.value.length}` : '"operations" must be an array',
});
const batchOperation = bodyChecker(BatchOperation, {
  "": "an operation must be a JSON object",
  op: '"op" must be "create", "update" or "delete"',
  "*": ({ key }) => `unknown key "${key}" (expected op, id, data)`,
});
const checkOperation = batchOperation.parse;

/** Multi-record writes of the data API: `POST /api/v1/:collection/bulk` and `/batch`. */
export function recordWriteRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .post(
      "/:collection/bulk",
      async ({ request, params, set }) => {
        const p = await principalOf(ctx, request);
        const raw = await readJson(request, max, "records");
        return idempotent(ctx, { request, set }, p, raw, { status: 201, transaction: true }, () => bulkCreate(ctx, params.collection, bulkBody.defer(raw), p));
      },
      doc({ idempotent: true, summary: "Insert 1..500 records in one transaction", tag, access: "data", body: BulkBody, ok: t.Array(RecordBody), status: 201, errors: [409, 422] }),
    )
    .post(
      "/:collection/batch",
      async ({ request, params, set }) => {
        const p = await principalOf(ctx, request);
        const raw = await readJson(request, max, "batch");
        return idempotent(ctx, { request, set }, p, raw, { status: 200, transaction: true }, () =>
          runBatch(ctx, params.collection, batchBody.defer(raw), p, checkOperation),
        );
      },
      doc({ idempotent: true, summary: "Run 1..100 create/update/delete operations atomically", tag, access: "data", body: BatchBody, ok: BatchResult }),
    );
}
