import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { Collection } from "../catalog/types.ts";
import { addFields } from "../collections/grow.ts";
import { inTransaction } from "../transaction.ts";
import { AppError, ValidationError, bodyOf, type Checked } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { createDecisions, createDenied } from "./access.ts";
import { settleDecisions } from "../rules/expr/settle.ts";
import type { Cond } from "../db/condition.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { flushRows, insertPlain, insertPlainRun, insertRecord, type PendingRow } from "./store.ts";

/** Most records one bulk request may carry (SPEC §8). */
export const MAX_BULK = 500;

/** Adds the failing element's `index` to an error thrown while writing it. */
function withIndex(e: unknown, index: number): unknown {
  if (e instanceof ValidationError) return new ValidationError(e.errors.map((x) => ({ ...x, index })), { ...e.extra, index });
  if (e instanceof AppError) return new AppError(e.status, e.code, e.message, { ...e.extra, index }, e.headers);
  return e;
}

/**
 * A record inserted before a later one of the bulk added fields was built without them, and so was its
 * change event (staged since `mark`): they are null there, as a read of it answers (after the fields it had,
 * in the collection's order).
 */
function withEveryField(ctx: AppContext, out: RecordJson[], col: Collection, mark: number): RecordJson[] {
  const fill = (record: Record<string, unknown>) => {
    for (const f of col.fields) if (!Object.hasOwn(record, f.name)) record[f.name] = null;
  };
  for (const record of out) fill(record);
  for (const event of ctx.events.stagedSince(mark)) if (event.collection === col.name) fill(event.record);
  return out;
}

/**
 * The records of a bulk into a collection without hooks or relations (most bulks): the collection's lookups
 * once, then a run over the records, their rows written together at the end (on a database server in one round
 * trip, not one per record; on SQLite in one loop over the prepared single-row insert, without a promise per
 * row). A record that adds fields stops the run while they are added. Returns the handle as the last record left it.
 */
async function insertPlainBulk(ctx: AppContext, h: CollectionHandle, items: readonly Record<string, unknown>[], p: Principal, out: RecordJson[]): Promise<CollectionHandle> {
  const pending: PendingRow[] = [];
  for (let index = 0; index < items.length; ) {
    const run = insertPlainRun(ctx, h, items, index, p, pending, out, withIndex);
    index = run.next;
    if (!run.fresh) break;
    try {
      h = await addFields(ctx, h, run.fresh);
      out.push(insertPlain(ctx, h, run.clean, p, pending));
    } catch (err) {
      throw withIndex(err, index);
    }
    index++;
  }
  // One pending row per record, in order.
  await flushRows(ctx, pending, withIndex);
  return h;
}

/**
 * The records of a bulk one by one through insertRecord (hooks or relations), each with the collection as the
 * records before it left it. With hooks each row is written at once, before its afterCreate runs: a row that
 * fails (a unique index) fails before the hooks of the records after it, on both engines; without, rows of
 * records without relations wait to be written together at the end.
 */
async function insertEach(ctx: AppContext, name: string, items: readonly Record<string, unknown>[], p: Principal, out: RecordJson[], pending: PendingRow[] | undefined): Promise<void> {
  const indexOfPending: number[] = [];
  for (let index = 0; index < items.length; index++) {
    const h = await openCollection(ctx, name);
    const before = pending?.length ?? 0;
    try {
      out.push(await insertRecord(ctx, h, items[index]!, p, pending));
    } catch (err) {
      throw withIndex(err, index);
    }
    if (pending && pending.length > before) indexOfPending.push(index);
  }
  if (pending?.length) await flushRows(ctx, pending, (err, i) => withIndex(err, indexOfPending[i]!));
}

/** The records of a bulk one by one, each decided by the create rule (`decisions`, asked now) after those before it are written. */
async function insertEachDecided(
  ctx: AppContext,
  name: string,
  items: readonly Record<string, unknown>[],
  p: Principal,
  out: RecordJson[],
  decisions: readonly (boolean | Cond)[],
): Promise<void> {
  for (let index = 0; index < items.length; index++) {
    const h = await openCollection(ctx, name);
    const [ok] = await settleDecisions(ctx.db, [decisions[index]!]);
    if (!ok) throw createDenied(h.col, items.length, index);
    try {
      out.push(await insertRecord(ctx, h, items[index]!, p));
    } catch (err) {
      throw withIndex(err, index);
    }
  }
}

/**
 * `POST /:collection/bulk`: 1..500 record objects inserted in one transaction, hooks and field
 * rules included. Any failure saves nothing (no row, no new column); a 422 carries the failing
 * element's `index`, on the body and on every error.
 */
export async function bulkCreate(ctx: AppContext, name: string, body: Checked<Record<string, unknown>[]>, p: Principal): Promise<RecordJson[]> {
  const outer = await openCollection(ctx, name);
  prepareRules(outer.catalog);
  // An expression rule is decided per record (checkCreates), `@request.body` being each one.
  if (!isExpressionRule(outer.col.rules.create)) checkAccess(outer.col, "create", p);
  const items = bodyOf(body);
  const fieldsBefore = outer.col.fields;
  return await inTransaction(ctx, async () => {
    const out: RecordJson[] = [];
    const mark = ctx.events.mark();
    // The collection as this transaction sees it (a delete that committed before it began is 404).
    let h = await openCollection(ctx, name);
    // The create rule on every record as it would be stored (in the transaction: relation paths and `@exists` see its view).
    prepareRules(h.catalog);
    const decisions = createDecisions(h.col, p, items);
    if (decisions?.some((d) => typeof d === "object")) {
      // SECURITY: a rule that asks the database (`@exists`, a relation path) sees the records of the bulk before
      // each one, as a batch's operations do: one vote per user holds inside one bulk too.
      await insertEachDecided(ctx, name, items, p, out, decisions);
      h = await openCollection(ctx, name);
    } else if (decisions?.includes(false)) throw createDenied(h.col, items.length, decisions.indexOf(false));
    else if (h.hooks.length === 0 && h.from.length === 0) h = await insertPlainBulk(ctx, h, items, p, out);
    else {
      await insertEach(ctx, name, items, p, out, h.hooks.length === 0 ? [] : undefined);
      // The collection as the last record left it (the fields it added).
      h = await openCollection(ctx, name);
    }
    return h.col.fields === fieldsBefore ? out : withEveryField(ctx, out, h.col, mark);
  });
}
