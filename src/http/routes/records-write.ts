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
        const records = await bulkCreate(ctx, params.collection, bulkBody.defer(await readJson(request, max, "records")), p);
        set.status = 201;
        return records;
      },
      doc({ summary: "Insert 1..500 records in one transaction", tag, access: "data", body: BulkBody, ok: t.Array(RecordBody), status: 201, errors: [409, 422] }),
    )
    .post(
      "/:collection/batch",
      async ({ request, params }) => {
        const p = await principalOf(ctx, request);
        return runBatch(ctx, params.collection, batchBody.defer(await readJson(request, max, "batch")), p, checkOperation);
      },
      doc({ summary: "Run 1..100 create/update/delete operations atomically", tag, access: "data", body: BatchBody, ok: BatchResult }),
    );
}
