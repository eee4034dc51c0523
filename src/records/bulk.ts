import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { catalogView, requireCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { inTransaction } from "../transaction.ts";
import { AppError, ValidationError, bodyOf, type Checked } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { checkCreates } from "./access.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { relationsFrom } from "../relations/catalog.ts";
import { flushRows, insertPlain, insertPlainRun, insertRecord, type PendingRow } from "./store.ts";

/** Most records one bulk request may carry (SPEC §8). */
export const MAX_BULK = 500;

/**
 * The collection as the current transaction sees it: a record that added a column marks the
 * catalog stale, and the next record must know that column. 404 once it is gone (a delete that
 * committed before this transaction began).
 */
export function currentCollection(ctx: AppContext, col: Collection): Collection | Promise<Collection> {
  const view = catalogView(ctx);
  return (!view.stale && view.byName.get(col.name.toLowerCase())) || requireCollection(ctx, col.name);
}

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
 * `POST /:collection/bulk`: 1..500 record objects inserted in one transaction, hooks and field
 * rules included. Any failure saves nothing (no row, no new column); a 422 carries the failing
 * element's `index`, on the body and on every error.
 */
export async function bulkCreate(ctx: AppContext, name: string, body: Checked<Record<string, unknown>[]>, p: Principal): Promise<RecordJson[]> {
  let col = await requireCollection(ctx, name);
  await prepareRules(ctx, p, col);
  // An expression rule is decided per record (checkCreates), `@request.body` being each one.
  if (!isExpressionRule(col.rules.create)) checkAccess(col, "create", p);
  const items = bodyOf(body);
  const fieldsBefore = col.fields;
  return await inTransaction(ctx, async () => {
    // The create rule on every record as it would be stored (in the transaction: relation paths and `@exists` see its view).
    await checkCreates(ctx, col, p, items);
    const out: RecordJson[] = [];
    const mark = ctx.events.mark();
    // Rows are written together at the end: on a database server in one round trip, not one per record; on
    // SQLite in one loop over the prepared single-row insert, without a promise per row. With hooks loaded
    // each row is written at once, before its afterCreate runs: a row that fails (a unique index) fails
    // before the hooks of the records after it, on both engines.
    const pending: PendingRow[] | undefined = ctx.hooks.list.length === 0 ? [] : undefined;
    // A collection without hooks or relations (most bulks): its lookups once, then a run over the records.
    // relationsFrom is the transaction's catalog check; the collection is then looked up as it now is.
    if (pending && ctx.hooks.list.length === 0 && (await relationsFrom(ctx, col.name)).length === 0) {
      const current = currentCollection(ctx, col);
      col = current instanceof Promise ? await current : current;
      for (let index = 0; index < items.length; ) {
        const run = insertPlainRun(ctx, col, items, index, p, pending, out, withIndex);
        index = run.next;
        if (!run.grown) break;
        try {
          col = await run.grown;
          const record = insertPlain(ctx, col, run.clean, p, pending);
          out.push(record instanceof Promise ? await record : record);
        } catch (err) {
          throw withIndex(err, index);
        }
        index++;
      }
      // One pending row per record, in order.
      await flushRows(ctx, pending, withIndex);
    } else {
      const indexOfPending: number[] = [];
      for (let index = 0; index < items.length; index++) {
        const current = currentCollection(ctx, col);
        col = current instanceof Promise ? await current : current;
        const before = pending?.length ?? 0;
        try {
          const record = insertRecord(ctx, col, items[index]!, p, pending);
          out.push(record instanceof Promise ? await record : record);
        } catch (err) {
          throw withIndex(err, index);
        }
        if (pending && pending.length > before) indexOfPending.push(index);
      }
      if (pending?.length) await flushRows(ctx, pending, (err, i) => withIndex(err, indexOfPending[i]!));
      // The collection as the last record left it (the fields it added).
      const current = currentCollection(ctx, col);
      col = current instanceof Promise ? await current : current;
    }
    return col.fields === fieldsBefore ? out : withEveryField(ctx, out, col, mark);
  });
}
