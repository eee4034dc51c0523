import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { inTransaction } from "../transaction.ts";
import { AppError, ValidationError, badRequest, bodyOf, type Checked } from "../errors.ts";
import { fetchRecord, recordBytes, type RecordJson } from "../query/rows.ts";
import { recordNotFound, recordOpAccess } from "../rules/access.ts";
import { checkCreates, checkRecordAccess } from "./access.ts";
import { prepareRules } from "../rules/scope.ts";
import { relationEffects } from "./cascade.ts";
import { insertRecord, softDeleteRecord, updateRecordRow } from "./store.ts";

/** Most operations one batch may carry (SPEC §8). */
export const MAX_BATCH = 100;

export type BatchResult =
  | { op: "create"; record: RecordJson }
  | { op: "update"; record: RecordJson }
  | { op: "delete"; id: string };

/** 400 `batch_failed` naming the operation by index and type, with the reason (CONTRACT §4, §8b). */
function batchFailed(index: number, op: string, e: unknown): unknown {
  if (!(e instanceof AppError)) return e;
  const reason = e instanceof ValidationError ? e.errors.map((x) => x.message).join(" ") : e.message;
  return new AppError(400, "batch_failed", `operation ${index} (${op}): ${reason}`, { index, op });
}

/** One operation of a batch, as its schema allows it. */
export interface BatchOperation {
  op: "create" | "update" | "delete";
  id?: unknown;
  data?: unknown;
}

/** Checks the shape of one operation (throws 400 when it is malformed); the route gives the schema's checker. */
export type CheckOperation = (raw: unknown) => BatchOperation;

/** What an operation needs besides its shape: an id to update or delete, data to create or update. */
function readOperation(raw: unknown, check: CheckOperation): { op: BatchOperation["op"]; id?: string; data?: Record<string, unknown> } {
  const o = check(raw);
  if (o.op !== "create" && (typeof o.id !== "string" || !o.id)) throw badRequest('"id" must be a record id');
  if (o.op !== "delete" && (!o.data || typeof o.data !== "object" || Array.isArray(o.data))) throw badRequest('"data" must be a JSON object');
  return o as { op: BatchOperation["op"]; id?: string; data?: Record<string, unknown> };
}

/** Fetches an active record for update/delete and applies the operation's rule to it. */
async function loadForWrite(
  ctx: AppContext,
  h: CollectionHandle,
  op: "update" | "delete",
  id: string,
  p: Principal,
  body?: Record<string, unknown>,
): Promise<RecordJson> {
  // An expression refusing the caller whatever the record waits for the record: 404 where it may not be read.
  const access = recordOpAccess(h.col, op, p, body);
  const previous = await fetchRecord(ctx, h.col, id);
  if (!previous || previous._deleted_at !== null) throw recordNotFound();
  await checkRecordAccess(ctx, h.col, op, p, access, previous);
  return previous;
}

async function runOperation(ctx: AppContext, h: CollectionHandle, o: ReturnType<typeof readOperation>, p: Principal): Promise<BatchResult> {
  prepareRules(h.catalog);
  if (o.op === "create") {
    await checkCreates(ctx, h.col, p, [o.data!]);
    return { op: "create", record: await insertRecord(ctx, h, o.data!, p) };
  }
  if (o.op === "update")
    return { op: "update", record: await updateRecordRow(ctx, h, await loadForWrite(ctx, h, "update", o.id!, p, o.data!), o.data!, p) };
  await softDeleteRecord(ctx, h, await loadForWrite(ctx, h, "delete", o.id!, p), p, relationEffects);
  return { op: "delete", id: o.id! };
}

/** The most JSON a batch's results may hold: past it the batch fails (400 `batch_failed`) and nothing is kept. */
export const MAX_BATCH_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * `POST /:collection/batch`: 1..100 create/update/delete operations, run in order in one
 * transaction (each sees the ones before), every one under its own access rule with the
 * requester's identity, hooks included. Any failure rolls everything back: 400 `batch_failed`.
 */
export async function runBatch(
  ctx: AppContext,
  name: string,
  body: Checked<{ operations: unknown[] }>,
  p: Principal,
  checkOperation: CheckOperation,
): Promise<{ results: BatchResult[] }> {
  await openCollection(ctx, name);
  const ops = bodyOf(body).operations;
  const results = await inTransaction(ctx, async () => {
    const out: BatchResult[] = [];
    let bytes = 0;
    for (let index = 0; index < ops.length; index++) {
      const raw: unknown = ops[index];
      const opName = raw && typeof raw === "object" && typeof (raw as { op?: unknown }).op === "string" ? (raw as { op: string }).op : "unknown";
      try {
        // Each operation sees the collection as the ones before it left it (the fields they added).
        const h = await openCollection(ctx, name);
        const result = await runOperation(ctx, h, readOperation(raw, checkOperation), p);
        // Each result carries its whole record: 100 updates of one 16 MiB record would answer 1.6 GB.
        if (result.op !== "delete" && (bytes += recordBytes(result.record)) > MAX_BATCH_ANSWER_BYTES)
          throw badRequest(`the results would make the answer larger than ${MAX_BATCH_ANSWER_BYTES / 1048576} MiB: send fewer operations on large records`);
        out.push(result);
      } catch (err) {
        throw batchFailed(index, opName.slice(0, 20), err);
      }
    }
    return out;
  });
  return { results };
}
