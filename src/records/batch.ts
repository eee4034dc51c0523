import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { inTransaction } from "../db/tx.ts";
import { mapSqliteError } from "../db/sqlite-errors.ts";
import { AppError, ValidationError, badRequest } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { checkRecordAccess } from "./access.ts";
import { currentCollection } from "./bulk.ts";
import { relationEffects } from "./cascade.ts";
import { insertRecord, softDeleteRecord, updateRecordRow } from "./store.ts";

/** Most operations one batch may carry (SPEC §8). */
export const MAX_BATCH = 100;

const OPS = new Set(["create", "update", "delete"]);

export type BatchResult =
  | { op: "create"; record: RecordJson }
  | { op: "update"; record: RecordJson }
  | { op: "delete"; id: string };

/** 400 `batch_failed` naming the operation by index and type, with the reason (CONTRACT §4, §8b). */
function batchFailed(index: number, op: string, err: unknown): unknown {
  const e = mapSqliteError(err);
  if (!(e instanceof AppError)) return e;
  const reason = e instanceof ValidationError ? e.errors.map((x) => x.message).join(" ") : e.message;
  return new AppError(400, "batch_failed", `operation ${index} (${op}): ${reason}`, { index, op });
}

/** Checks the shape of one operation; throws a plain message when it is malformed. */
function readOperation(raw: unknown): { op: string; id?: string; data?: Record<string, unknown> } {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badRequest("an operation must be a JSON object");
  const o = raw as Record<string, unknown>;
  if (typeof o.op !== "string" || !OPS.has(o.op)) throw badRequest('"op" must be "create", "update" or "delete"');
  for (const k of Object.keys(o))
    if (k !== "op" && k !== "id" && k !== "data") throw badRequest(`unknown key "${k}" (expected op, id, data)`);
  if (o.op !== "create" && (typeof o.id !== "string" || !o.id)) throw badRequest('"id" must be a record id');
  if (o.op !== "delete" && (!o.data || typeof o.data !== "object" || Array.isArray(o.data)))
    throw badRequest('"data" must be a JSON object');
  return { op: o.op, id: o.id as string | undefined, data: o.data as Record<string, unknown> | undefined };
}

/** Fetches an active record for update/delete and applies the operation's rule to it. */
async function loadForWrite(ctx: AppContext, col: Collection, op: "update" | "delete", id: string, p: Principal): Promise<RecordJson> {
  const access = checkAccess(col, op, p);
  const previous = await fetchRecord(ctx, col, id);
  if (!previous || previous._deleted_at !== null) throw recordNotFound();
  checkRecordAccess(col, op, p, access, previous);
  return previous;
}

async function runOperation(ctx: AppContext, col: Collection, o: ReturnType<typeof readOperation>, p: Principal): Promise<BatchResult> {
  if (o.op === "create") {
    checkAccess(col, "create", p);
    return { op: "create", record: await insertRecord(ctx, col, o.data!, p) };
  }
  if (o.op === "update") return { op: "update", record: await updateRecordRow(ctx, col, await loadForWrite(ctx, col, "update", o.id!, p), o.data!, p) };
  await softDeleteRecord(ctx, col, await loadForWrite(ctx, col, "delete", o.id!, p), p, relationEffects);
  return { op: "delete", id: o.id! };
}

/**
 * `POST /:collection/batch`: 1..100 create/update/delete operations, run in order in one
 * transaction (each sees the ones before), every one under its own access rule with the
 * requester's identity, hooks included. Any failure rolls everything back: 400 `batch_failed`.
 */
export async function runBatch(ctx: AppContext, name: string, body: unknown, p: Principal): Promise<{ results: BatchResult[] }> {
  let col = await requireCollection(ctx, name);
  if (!body || typeof body !== "object" || Array.isArray(body)) throw badRequest('the request body must be { "operations": [...] }');
  const ops = (body as { operations?: unknown }).operations;
  if (!Array.isArray(ops)) throw badRequest('"operations" must be an array');
  if (ops.length < 1 || ops.length > MAX_BATCH) throw badRequest(`a batch takes 1 to ${MAX_BATCH} operations, got ${ops.length}`);
  const results = await inTransaction(ctx, async () => {
    const out: BatchResult[] = [];
    for (let index = 0; index < ops.length; index++) {
      const raw: unknown = ops[index];
      const opName = raw && typeof raw === "object" && typeof (raw as { op?: unknown }).op === "string" ? (raw as { op: string }).op : "unknown";
      try {
        col = await currentCollection(ctx, col);
        out.push(await runOperation(ctx, col, readOperation(raw), p));
      } catch (err) {
        throw batchFailed(index, opName.slice(0, 20), err);
      }
    }
    return out;
  });
  return { results };
}
