import type { Principal } from "../principal.ts";
import type { Collection, Operation } from "../catalog/types.ts";
import type { AppContext } from "../context.ts";
import { AppError, forbidden } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";
import { accessOf, checkAccess, expressionRefusal, ownsRecord, recordNotFound, type Access, type RuleAccess } from "../rules/access.ts";
import { decideRule } from "../rules/expr/compile.ts";
import type { Cond } from "../db/condition.ts";
import { settleDecisions } from "../rules/expr/settle.ts";

/**
 * Which of `records` (in memory: as stored, as they would be stored, or as an event carries them) an
 * expression rule lets through: decided in memory where it can be, the rest (relation paths, `@exists`) in one
 * statement.
 */
export async function rulePasses(ctx: AppContext, access: RuleAccess, records: readonly RecordJson[]): Promise<boolean[]> {
  return await settleDecisions(ctx.db, records.map((r) => decideRule(access.rule, r, access.env)));
}

/** True when `access` lets the caller at this record. */
export async function accessPasses(ctx: AppContext, access: Access, p: Principal, record: RecordJson): Promise<boolean> {
  if (access === "all") return true;
  if (access === "own") return ownsRecord(p, record);
  return (await rulePasses(ctx, access, [record]))[0]!;
}

/**
 * The read rule on a record at hand, without a statement or an exception: true or false, or the expression
 * rule applied to the reader where only it can decide (rulePasses). Runs per stream per realtime event.
 */
export function readDecision(col: Collection, p: Principal, record: RecordJson): boolean | RuleAccess {
  const access = accessOf(col, "read", p);
  if (access === null || access === "all") return access === "all";
  return access === "own" ? ownsRecord(p, record) : access;
}

/** True when the principal may read this record under the collection's read rule. */
export async function canRead(ctx: AppContext, col: Collection, p: Principal, record: RecordJson): Promise<boolean> {
  const access = accessOf(col, "read", p);
  return access !== null && (await accessPasses(ctx, access, p, record));
}

/**
 * Applies the collection's decision (`access`, from the update or delete rule) to a fetched record for
 * update/delete/restore. A record the requester may not read is 404 whatever that rule allows (CONTRACT
 * §1): its existence stays hidden, and the answer, the record itself, would show it. A readable one that
 * the rule keeps from the requester is 403 (`access` null: an expression rule refused the requester whatever
 * the record, see recordOpAccess).
 */
export async function checkRecordAccess(ctx: AppContext, col: Collection, op: Operation, p: Principal, access: Access | null, record: RecordJson): Promise<void> {
  if (!(await canRead(ctx, col, p, record))) throw recordNotFound();
  if (access === null) throw expressionRefusal(col, op, p);
  if (await accessPasses(ctx, access, p, record)) return;
  throw forbidden(access === "own" ? `only the owner may ${op} this record` : `the ${op} rule of collection "${col.name}" does not allow this for this record`);
}

/** A record as a create would store it, for the create rule: its fields under their stored names, owned by the caller. */
function asStored(col: Collection, p: Principal, data: Readonly<Record<string, unknown>>, now: number): RecordJson {
  const record: RecordJson = { _id: null, _owner_id: p.kind === "user" ? p.userId : null, _created_at: now, _updated_at: now, _deleted_at: null };
  // A field the collection does not know yet is added by the write under the name given.
  for (const k in data) if (!k.startsWith("_")) record[col.fieldMap.get(k.toLowerCase())?.name ?? k] = data[k];
  return record;
}

/**
 * The create rule on each of `items` as it would be stored (CONTRACT §12: `_owner_id` is the caller,
 * `@request.body` the item): 401/403 for the first it refuses, with its `index` when there are several.
 */
export async function checkCreates(ctx: AppContext, col: Collection, p: Principal, items: readonly Readonly<Record<string, unknown>>[]): Promise<void> {
  const decisions = createDecisions(col, p, items);
  if (!decisions) return;
  const denied = (await settleDecisions(ctx.db, decisions)).indexOf(false);
  if (denied >= 0) throw createDenied(col, items.length, denied);
}

/**
 * The create rule's decision on each of `items`: true, false, or a condition the database answers (`@exists`, a
 * relation path), asked when settled (settleDecisions), so after whatever was written before. Null when no
 * expression rule decides (the rule passes them all); 401/403 at once where the rule refuses the caller whatever
 * the record.
 */
export function createDecisions(col: Collection, p: Principal, items: readonly Readonly<Record<string, unknown>>[]): (boolean | Cond)[] | null {
  const now = Date.now();
  const accesses: Access[] = [];
  for (let i = 0; i < items.length; i++) {
    try {
      accesses.push(checkAccess(col, "create", p, items[i]));
    } catch (err) {
      throw items.length > 1 && err instanceof AppError ? new AppError(err.status, err.code, err.message, { ...err.extra, index: i }) : err;
    }
  }
  if (!accesses.some((a) => typeof a === "object")) return null;
  return items.map((item, i) => {
    const a = accesses[i]!;
    return typeof a === "object" ? decideRule(a.rule, asStored(col, p, item, now), a.env) : true;
  });
}

/** 403 for a record the create rule refuses: item `index` of `count`. */
export function createDenied(col: Collection, count: number, index: number): AppError {
  const message = `the create rule of collection "${col.name}" does not allow this record`;
  return count > 1 ? new AppError(403, "forbidden", message, { index }) : forbidden(message);
}
