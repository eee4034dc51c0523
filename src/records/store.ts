import type { Engine } from "../db/engine.ts";
import { ADMIN, type Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { q } from "../db/ident.ts";
import { openCollection } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { addFields, newFieldsOf } from "../collections/grow.ts";
import { shapeOf, type BodyShape, type Collection, type FieldDef } from "../catalog/types.ts";
import { validateFieldRules } from "../collections/validate.ts";
import { AppError, ValidationError, type FieldError } from "../errors.ts";
import type { ChangeAction, ChangeEvent } from "../events/bus.ts";
import { hasHooks, hookAuth, runHooks } from "../hooks/run.ts";
import { hookTx } from "./tx.ts";
import type { HookEvent } from "../hooks/types.ts";
import { newRecordId } from "../ids.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { prepareRelations, withoutRelations, type RelationWrite } from "../relations/check.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { encodeValue, userFields, userFieldsShared } from "./codec.ts";
import { changeLink, writeLinks, type LinkChange } from "./store-junction.ts";
import { preconditionFailed } from "./version.ts";
import { hasOperators, resolveOperators, type NumberDelta } from "./operators.ts";
import { deleteDroppedFiles, fileFields, fileValueErrors, filesAsStored } from "../files/values.ts";

export { dropLinksFrom, dropLinksTo } from "./store-junction.ts";

/**
 * The record store: the one writer of rows of user collections. Every write (insert, update,
 * soft delete, restore, hard delete, and the relation cascades that call back into it) runs the
 * collection's hooks (CONTRACT §5) and stages one change event per changed record on
 * `ctx.events`, so the event goes out after the caller's transaction commits and never for
 * one that rolls back. Every function here runs inside the caller's `inTransaction`.
 */

/**
 * What relations do when a record is deleted or restored. Passed in by the caller (the
 * relations module implements it), so the store does not import the cascades that call it.
 */
export interface RelationEffects {
  /** After the row was deleted (soft: marked, hard: removed): restrict, cascade, set_null. */
  deleted(ctx: AppContext, h: CollectionHandle, record: RecordJson, mode: "soft" | "hard", p: Principal): Promise<void>;
  /** After the row was restored: brings back what its cascade soft-deleted. */
  restored(ctx: AppContext, h: CollectionHandle, id: string, p: Principal): Promise<void>;
}

/** Who made a change, as a change event names it. */
function actor(p: Principal): string | null {
  return p.kind === "user" ? p.userId : p.kind === "admin" ? "admin" : null;
}

/**
 * A copy of a record as an admin's GET returns it (relation fields, no expand): what change
 * events carry. `attachedFor` is the principal whose view `record` already has (null: none).
 * Only `many` fields depend on the reader, so most records are copied without a query.
 */
async function adminView(ctx: AppContext, h: CollectionHandle, record: RecordJson, attachedFor: Principal | null): Promise<RecordJson> {
  const copy = { ...record };
  if (attachedFor?.kind === "admin") return copy;
  const rels = h.from;
  if (!rels.length || (attachedFor && !rels.some((r) => r.type === "many"))) return copy;
  return (await attachRelationFields(ctx, h, [copy], ADMIN))[0];
}

function stage(
  ctx: AppContext,
  col: Collection,
  action: ChangeAction,
  record: RecordJson,
  previous: RecordJson | undefined,
  at: number,
  p: Principal,
): void {
  const event: ChangeEvent = { collection: col.name, action, record, at, by: actor(p) };
  if (previous) event.previous = previous;
  ctx.events.stage(event);
}

/** What a hook handler gets (CONTRACT §5, §15): with `tx`, a handle on the write's transaction, when the collection has hooks. */
function hookEvent(
  ctx: AppContext,
  h: CollectionHandle,
  op: HookEvent["op"],
  p: Principal,
  record: RecordJson | null,
  previous: RecordJson | null,
  data: Record<string, unknown> | null = null,
): HookEvent {
  const event: HookEvent = { collection: h.name, op, data, record, previous, auth: hookAuth(p) };
  // Not enumerable: a hook that logs or copies its event (JSON, spread) gets the event's data, not the handle.
  if (h.hooks.length) Object.defineProperty(event, "tx", { value: hookTx(ctx), enumerable: false });
  return event;
}

/** `event` with the record as the write left it, for the after* hooks (with its `tx`). */
function withRecord(event: HookEvent, record: RecordJson): HookEvent {
  const next = { ...event, record };
  if (event.tx) Object.defineProperty(next, "tx", { value: event.tx, enumerable: false });
  return next;
}

/**
 * The `_owner_id` a before* hook put in `data` (CONTRACT §15): a user id or null; undefined when it set none.
 * Clients cannot: a body's `_` keys are dropped before hooks see it.
 */
function ownerSetByHook(data: Record<string, unknown>): string | null | undefined {
  if (!Object.hasOwn(data, "_owner_id")) return undefined;
  const v = data._owner_id;
  if (v === null || (typeof v === "string" && v.length > 0 && v.length <= 64)) return v;
  throw new AppError(400, "hook_rejected", "a hook set _owner_id to something that is neither a user id nor null");
}

/** Rows of a bulk insert not yet written: see `insertRecord`'s `pending` and `flushRows`. */
export interface PendingRow {
  table: string;
  fields: string[];
  values: (string | number | null)[];
}

/**
 * Inserts one record: beforeCreate hooks, names and types, field rules, new columns, the row,
 * its links, afterCreate hooks, the `create` event. Returns the record as `p` reads it. `h` is the
 * collection as resolved in the caller's write transaction.
 * With `pending`, the row of a record of a collection without relations is added there instead of
 * written, for `flushRows` to write with its neighbours in one statement (before the transaction ends).
 */
export function insertRecord(ctx: AppContext, h: CollectionHandle, body: Record<string, unknown>, p: Principal, pending?: PendingRow[]): Promise<RecordJson> {
  if (h.hooks.length || h.from.length) return insertLinked(ctx, h, body, p, pending);
  // Without hooks nothing changes the body's fields: they are not copied.
  const clean = userFieldsShared(body);
  const fresh = newFieldsOf(h.col, clean, "create");
  if (fresh.length) return addFields(ctx, h, fresh).then((grown) => insertPlainNow(ctx, grown, clean, p, pending));
  return insertPlainNow(ctx, h, clean, p, pending);
}

/**
 * The rest of `insertRecord` for a collection without hooks or relations, once every field of the body
 * exists: the record is final as built (no relation fields to attach for anyone). Kept apart from the
 * general case, and not async, so that the hot path of creates is one small function (the JIT's optimizing
 * tier compiles an async function of the general case's size in about 200 ms of CPU).
 */
function insertPlainNow(ctx: AppContext, h: CollectionHandle, clean: Record<string, unknown>, p: Principal, pending: PendingRow[] | undefined): Promise<RecordJson> {
  if (pending) return Promise.resolve(insertPlain(ctx, h, clean, p, pending));
  const row = newRow(ctx, h.col, clean, p, NO_ERRORS);
  const record = insertedRecord(h.col, row.shape, row.values, clean);
  return ctx.db.run(insertSql(ctx, h.name, row.shape.names), row.values).then(() => {
    stage(ctx, h.col, "create", { ...record }, undefined, row.now, p);
    return record;
  });
}

/**
 * `insertPlainNow` for a record of a bulk insert: its row goes to `pending` (flushRows writes it), so the
 * record is answered at once.
 */
export function insertPlain(ctx: AppContext, h: CollectionHandle, clean: Record<string, unknown>, p: Principal, pending: PendingRow[]): RecordJson {
  const row = newRow(ctx, h.col, clean, p, NO_ERRORS);
  const record = insertedRecord(h.col, row.shape, row.values, clean);
  pending.push({ table: h.name, fields: row.shape.names, values: row.values });
  stage(ctx, h.col, "create", { ...record }, undefined, row.now, p);
  return record;
}

const NO_ERRORS: readonly FieldError[] = [];

/** Where `insertPlainRun` stopped: at the end, or at a record (`next`) that names fields the collection lacks (`fresh`). */
export type PlainRun = { next: number; fresh?: undefined } | { next: number; fresh: readonly FieldDef[]; clean: Record<string, unknown> };

/**
 * The records `bodies[from..]` of a bulk insert into a collection without hooks or relations (`h`, resolved
 * in the transaction), as `insertRecord` with `pending` inserts each: what `insertRecord` looks up per record
 * is so looked up once per bulk, and the loop is the work of each record alone. The records go to `out`, their
 * rows to `pending`. It stops at a record that names fields the collection does not have yet (their columns
 * are added asynchronously): the caller adds them (addFields) and finishes that record with `insertPlain`.
 * An error of record i is thrown as `onError(err, i)`.
 */
export function insertPlainRun(
  ctx: AppContext,
  h: CollectionHandle,
  bodies: readonly Record<string, unknown>[],
  from: number,
  p: Principal,
  pending: PendingRow[],
  out: RecordJson[],
  onError: (err: unknown, i: number) => unknown,
): PlainRun {
  let i = from;
  try {
    for (; i < bodies.length; i++) {
      const clean = userFieldsShared(bodies[i]!);
      const fresh = newFieldsOf(h.col, clean, "create");
      if (fresh.length) return { next: i, fresh, clean };
      out.push(insertPlain(ctx, h, clean, p, pending));
    }
  } catch (err) {
    throw onError(err, i);
  }
  return { next: i };
}

/**
 * A new record's row: the field rules checked (with `errors` found before, a 422 listing all), a new id,
 * and the values of the system columns then of the body's fields. Past the checks every key names a field
 * under its own spelling, but for nulls of fields never seen (nothing to store): the shape lists the fields to write.
 */
function newRow(ctx: AppContext, col: Collection, clean: Record<string, unknown>, p: Principal, errors: readonly FieldError[], owner?: string | null) {
  const failed = validateFieldRules(col, clean, "create");
  if (errors.length) failed.push(...errors);
  // Files (CONTRACT §14): a file field holds only names just uploaded.
  if (fileFields(col).length) failed.push(...fileValueErrors(col, clean, null));
  if (failed.length) throw new ValidationError(failed);
  const now = ctx.clock.now();
  const shape = shapeOf(col, clean);
  const values: (string | number | null)[] = [newRecordId(now), now, now, owner !== undefined ? owner : p.kind === "user" ? p.userId : null, null];
  let i = 0;
  for (const k in clean) {
    const def = shape.defs[i++];
    if (def) values.push(encodeValue(def.type, clean[k]));
  }
  return { now, shape, values };
}

/** The relations' part of a body (`withoutRelations` for a collection without them). */
async function relationsOf(ctx: AppContext, h: CollectionHandle, clean: Record<string, unknown>, p: Principal): Promise<RelationWrite> {
  return h.from.length ? await prepareRelations(ctx, h, clean, p) : withoutRelations(clean);
}

/**
 * `h` with the new fields of the write's stored part added, when it names any (inside the caller's write
 * transaction). A 422 for names or types lists the relations' failures too. The fields are looked for again in
 * the collection as the transaction has it now: a hook's own writes (`tx`) may have added some since `h` was read.
 */
async function grownFor(ctx: AppContext, h: CollectionHandle, relations: RelationWrite, mode: "create" | "update"): Promise<CollectionHandle> {
  let fresh = freshFieldsOf(h, relations, mode);
  if (!fresh.length) return h;
  const current = await openCollection(ctx, h.name);
  if (current.col !== h.col) {
    h = current;
    fresh = freshFieldsOf(h, relations, mode);
    if (!fresh.length) return h;
  }
  return await addFields(ctx, h, fresh);
}

/** newFieldsOf for the stored part of a write; a 422 for names or types lists the relations' failures too. */
function freshFieldsOf(h: CollectionHandle, relations: RelationWrite, mode: "create" | "update"): readonly FieldDef[] {
  try {
    return newFieldsOf(h.col, relations.stored, mode);
  } catch (err) {
    if (err instanceof ValidationError && relations.errors.length) throw new ValidationError([...err.errors, ...relations.errors]);
    throw err;
  }
}

/** `insertRecord` with hooks or relations. */
async function insertLinked(ctx: AppContext, h: CollectionHandle, body: Record<string, unknown>, p: Principal, pending: PendingRow[] | undefined): Promise<RecordJson> {
  const hooked = h.hooks.length > 0;
  const data = hooked ? userFields(body) : userFieldsShared(body);
  if (hooked) await runHooks(h.hooks, "beforeCreate", hookEvent(ctx, h, "create", p, null, null, data));
  const owner = hooked ? ownerSetByHook(data) : undefined;
  const clean = hooked ? userFields(data) : data;
  const relations = await relationsOf(ctx, h, clean, p);
  h = await grownFor(ctx, h, relations, "create");
  const col = h.col;
  const row = newRow(ctx, col, clean, p, relations.errors, owner);
  const id = row.values[0] as string;
  const plain = h.from.length === 0;
  if (pending && plain) pending.push({ table: col.name, fields: row.shape.names, values: row.values });
  else await ctx.db.run(insertSql(ctx, col.name, row.shape.names), row.values);
  if (relations.links.length) await writeLinks(ctx, relations, id);
  const inserted = insertedRecord(col, row.shape, row.values, clean);
  const record = plain ? inserted : (await attachRelationFields(ctx, h, [inserted], p))[0];
  stage(ctx, col, "create", plain ? { ...record } : await adminView(ctx, h, record, p), undefined, row.now, p);
  if (!hooked) return record;
  return await afterHooks(ctx, h, "afterCreate", record, p, hookEvent(ctx, h, "create", p, record, null, clean));
}

/**
 * Runs the `after*` handlers of a write and answers its record: as they left it when one of them changed it through
 * `tx` (a slug set after the create: the event it staged says so), so the answer and its ETag are the version the
 * transaction commits; else `record`, read no further.
 */
async function afterHooks(ctx: AppContext, h: CollectionHandle, name: "afterCreate" | "afterUpdate", record: RecordJson, p: Principal, e: HookEvent): Promise<RecordJson> {
  if (!hasHooks(h.hooks, name)) return record;
  const mark = ctx.events.mark();
  await runHooks(h.hooks, name, e);
  if (!ctx.events.stagedSince(mark).some((x) => x.record._id === record._id && x.collection === h.name)) return record;
  // The collection as the transaction has it now: the hook may have added the field it set.
  const current = await openCollection(ctx, h.name);
  const now = await fetchRecord(ctx, current.col, record._id as string);
  return now ? (await attachRelationFields(ctx, current, [now], p))[0]! : record;
}

/**
 * The record just inserted, built from what was written instead of read back (a SELECT per
 * record would double the cost of bulk inserts): system fields, then every known field, null
 * where the body did not set it. Stored values decode to exactly the JSON values sent.
 */
function insertedRecord(col: Collection, shape: BodyShape, system: (string | number | null)[], clean: Record<string, unknown>): RecordJson {
  const record: RecordJson = {
    _id: system[0],
    _created_at: system[1],
    _updated_at: system[2],
    _owner_id: system[3],
    _deleted_at: null,
  };
  for (const f of col.fields) record[f.name] = null;
  let i = 0;
  for (const k in clean) {
    const def = shape.defs[i++];
    if (def && clean[k] !== undefined) record[def.name] = clean[k];
  }
  return record;
}

const insertStatements = new WeakMap<Engine, Map<string, string>>();
/** The last INSERT built per engine: the records of a bulk insert mostly share one shape, found without building a key. */
const lastInsert = new WeakMap<Engine, { table: string; fields: string[]; sql: string }>();

const sameFields = (a: string[], b: string[]) => {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/** The INSERT for a table and field list, built once per shape and engine (bulk inserts repeat it; the engine caches its prepared statement). */
function insertSql(ctx: AppContext, table: string, fields: string[]): string {
  const last = lastInsert.get(ctx.db);
  if (last && last.table === table && sameFields(last.fields, fields)) return last.sql;
  let byShape = insertStatements.get(ctx.db);
  if (!byShape) insertStatements.set(ctx.db, (byShape = new Map()));
  const key = fields.length ? `${table}\u0000${fields.join("\u0000")}` : table;
  let stmt = byShape.get(key);
  if (stmt === undefined) {
    const cols = ['"_id"', '"_created_at"', '"_updated_at"', '"_owner_id"', '"_deleted_at"', ...fields.map(q)];
    stmt = `INSERT INTO ${q(table)} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`;
    if (byShape.size > 2000) byShape.clear();
    byShape.set(key, stmt);
  }
  lastInsert.set(ctx.db, { table, fields, sql: stmt });
  return stmt;
}

/** Most rows one multi-row INSERT of `flushRows` carries (PostgreSQL takes at most 65,535 values). */
const ROWS_PER_INSERT = 500;

/**
 * Writes pending rows, each run of rows of the same table and fields together: on an engine with
 * `runEach` (SQLite) as the prepared single-row INSERT run for each, else as one multi-row INSERT (one
 * round trip to a database server instead of one per row). When a multi-row statement fails (a unique
 * index), its rows are written again one by one, so the error names the row: `onRowError(err, i)` gets
 * the index in `rows` of the first row that fails. Call it inside the transaction the rows were prepared in.
 */
export async function flushRows(ctx: AppContext, rows: PendingRow[], onRowError: (err: unknown, i: number) => unknown): Promise<void> {
  let start = 0;
  while (start < rows.length) {
    const first = rows[start]!;
    let end = start + 1;
    while (end < rows.length && end - start < ROWS_PER_INSERT && rows[end]!.table === first.table && sameFields(rows[end]!.fields, first.fields)) end++;
    if (ctx.db.runEach) {
      const from = start;
      const values: (string | number | null)[][] = [];
      for (let i = start; i < end; i++) values.push(rows[i]!.values);
      await ctx.db.runEach(insertSql(ctx, first.table, first.fields), values, (err, i) => onRowError(err, from + i));
      start = end;
      continue;
    }
    const cols = ['"_id"', '"_created_at"', '"_updated_at"', '"_owner_id"', '"_deleted_at"', ...first.fields.map(q)];
    const tuple = `(${cols.map(() => "?").join(", ")})`;
    const values: (string | number | null)[] = [];
    for (let i = start; i < end; i++) values.push(...rows[i]!.values);
    const sql = `INSERT INTO ${q(first.table)} (${cols.join(", ")}) VALUES ${Array.from({ length: end - start }, () => tuple).join(", ")}`;
    try {
      // A savepoint: on PostgreSQL a failed statement would abort the whole transaction.
      await ctx.db.transaction(() => ctx.db.run(sql, values));
    } catch {
      for (let i = start; i < end; i++) {
        const row = rows[i]!;
        try {
          await ctx.db.run(insertSql(ctx, row.table, row.fields), row.values);
        } catch (err) {
          throw onRowError(err, i);
        }
      }
    }
    start = end;
  }
}

/**
 * Applies a patch to a fetched record: beforeUpdate hooks, names and types, field rules, the
 * row, its links, afterUpdate hooks, the `update` event. `forced` names a field a relation
 * sets to null (set_null): its field rules are not checked, since the relation decides.
 */
async function writeUpdate(
  ctx: AppContext,
  h: CollectionHandle,
  previous: RecordJson,
  body: Record<string, unknown>,
  p: Principal,
  opts: WriteOptions & { forced?: string } = {},
): Promise<RecordJson> {
  const forced = opts.forced;
  const data = userFields(filesAsStored(body, previous));
  const before = await adminView(ctx, h, previous, null);
  await runHooks(h.hooks, "beforeUpdate", hookEvent(ctx, h, "update", p, previous, previous, data));
  const owner = h.hooks.length ? ownerSetByHook(data) : undefined;
  let clean = userFields(data);
  let deltas: NumberDelta[] | undefined;
  if (hasOperators(clean)) ({ clean, deltas } = resolveOperators(h, clean, before));
  const relations = await relationsOf(ctx, h, clean, p);
  h = await grownFor(ctx, h, relations, "update");
  checkUpdate(h.col, clean, relations, forced, previous);
  const now = ctx.clock.now();
  try {
    await updateRow(ctx, h.col, previous, clean, now, opts.guard === true, deltas, owner);
  } catch (err) {
    // PostgreSQL refuses a sum past a number's range in the statement (SQLite's is found by checkDeltas): the same 422.
    if (deltas && err instanceof ValidationError && err.errors.length === 1 && err.errors[0]!.field === "value" && err.errors[0]!.rule === "type")
      throw new ValidationError(deltas.map((d) => ({ field: d.def.name, rule: "type", message: `"${d.def.name}" would leave the range of a number.` })));
    throw err;
  }
  await writeLinks(ctx, relations, previous._id as string);
  const written = (await fetchRecord(ctx, h.col, previous._id as string))!;
  if (deltas) checkDeltas(h.col, written, deltas);
  const record = (await attachRelationFields(ctx, h, [written], p))[0];
  stage(ctx, h.col, "update", await adminView(ctx, h, record, p), before, now, p);
  return await afterHooks(ctx, h, "afterUpdate", record, p, hookEvent(ctx, h, "update", p, record, previous, clean));
}

/**
 * The field rules hold for what the atomic operators left (CONTRACT §15): checked on the row as written, inside
 * the write's transaction, so a 422 here rolls the write back (`min: 0` keeps a stock from going below zero).
 */
function checkDeltas(col: Collection, written: RecordJson, deltas: readonly NumberDelta[]): void {
  const result: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const d of deltas) {
    const v = written[d.def.name];
    if (typeof v !== "number" || !Number.isFinite(v)) errors.push({ field: d.def.name, rule: "type", message: `"${d.def.name}" would leave the range of a number.` });
    else result[d.def.name] = v;
  }
  errors.push(...validateFieldRules(col, result, "update"));
  if (errors.length) throw new ValidationError(errors);
}

/** The field rules of a patch and the relations' errors, as one 422; a field `forced` to null is the relation's call. */
function checkUpdate(col: Collection, clean: Record<string, unknown>, relations: RelationWrite, forced: string | undefined, previous: RecordJson): void {
  let checked = clean;
  if (forced !== undefined && clean[forced] === null) {
    checked = { ...clean };
    delete checked[forced];
  }
  const errors = [...validateFieldRules(col, checked, "update"), ...relations.errors];
  // Files (CONTRACT §14): a file field holds only names it held or just uploaded.
  if (fileFields(col).length) errors.push(...fileValueErrors(col, clean, previous));
  if (errors.length) throw new ValidationError(errors);
}

/**
 * How a write moves a record's version (`_updated_at`, see version.ts): to now, or one past the stored value
 * when that is already now or later, computed in the database so two writes never leave the same version.
 * Its two parameters are both `now`.
 */
const BUMP = '"_updated_at" = CASE WHEN "_updated_at" >= ? THEN "_updated_at" + 1 ELSE ? END';

/** The WHERE of a write of one row: by id, and with `guard` only while the row is still at the version read (If-Match). */
function whereRow(previous: RecordJson, guard: boolean, values: (string | number | null)[]): string {
  values.push(previous._id as string);
  if (!guard) return '"_id" = ?';
  values.push(previous._updated_at as number);
  return '"_id" = ? AND "_updated_at" = ?';
}

/** The UPDATE of a patch: the version (`BUMP`) and every field the patch names that the collection has. 412 when `guard` and the row moved on. */
async function updateRow(
  ctx: AppContext,
  col: Collection,
  previous: RecordJson,
  clean: Record<string, unknown>,
  now: number,
  guard: boolean,
  deltas: readonly NumberDelta[] | undefined,
  owner: string | null | undefined,
): Promise<void> {
  const sets = [BUMP];
  const values: (string | number | null)[] = [now, now];
  if (owner !== undefined) {
    sets.push('"_owner_id" = ?');
    values.push(owner);
  }
  for (const [k, v] of Object.entries(clean)) {
    const def = col.fieldMap.get(k.toLowerCase());
    if (!def) continue;
    sets.push(`${q(def.name)} = ?`);
    values.push(encodeValue(def.type, v));
  }
  // Atomic operators: computed by the database from the row as it is now, never from a value read before.
  if (deltas)
    for (const d of deltas) {
      sets.push(`${q(d.def.name)} = COALESCE(${q(d.def.name)}, 0) + ?`);
      values.push(d.delta);
    }
  const where = whereRow(previous, guard, values);
  const done = await ctx.db.run(`UPDATE ${q(col.name)} SET ${sets.join(", ")} WHERE ${where}`, values);
  if (guard && done.changes === 0) throw preconditionFailed();
  // Files (CONTRACT §14): a replaced or removed file is deleted once this commits.
  if (fileFields(col).length) deleteDroppedFiles(ctx, col, previous, clean);
}

/**
 * Sets `_deleted_at` of a row (null: restores it) and moves its version; returns the new version. 412 when
 * `guard` and the row moved on since `previous` was read.
 */
async function markDeleted(ctx: AppContext, table: string, previous: RecordJson, deletedAt: number | null, now: number, guard: boolean): Promise<number> {
  const values: (string | number | null)[] = [deletedAt, now, now];
  const where = whereRow(previous, guard, values);
  const row = await ctx.db.get<{ v: number }>(`UPDATE ${q(table)} SET "_deleted_at" = ?, ${BUMP} WHERE ${where} RETURNING "_updated_at" AS v`, values);
  if (!row) throw preconditionFailed();
  return Number(row.v);
}

/** What a write of one fetched record may be asked for besides its data. */
export interface WriteOptions {
  /** The write applies only while the row is still at the version `previous` was read at, else 412 (If-Match). */
  guard?: boolean;
}

/** Applies a patch to a fetched active record (update and batch); `h` as resolved in the caller's transaction. */
export async function updateRecordRow(
  ctx: AppContext,
  h: CollectionHandle,
  previous: RecordJson,
  body: Record<string, unknown>,
  p: Principal,
  opts: WriteOptions = {},
): Promise<RecordJson> {
  return await writeUpdate(ctx, h, previous, body, p, opts);
}

/** A relation's `set_null`: clears `field` of a fetched record, through its update hooks. */
export async function setFieldNull(ctx: AppContext, h: CollectionHandle, previous: RecordJson, field: string, p: Principal): Promise<RecordJson> {
  return await writeUpdate(ctx, h, previous, { [field]: null }, p, { forced: field });
}

/**
 * Soft-deletes a fetched active record: beforeDelete hooks, `_deleted_at`, the `delete` event,
 * the relations' on_delete (cascades write through this store), afterDelete hooks. Returns the
 * record as `p` reads it.
 */
export function softDeleteRecord(ctx: AppContext, h: CollectionHandle, previous: RecordJson, p: Principal, effects: RelationEffects, opts: WriteOptions = {}): Promise<RecordJson> {
  return setDeleted(ctx, h, previous, p, opts, true, () => effects.deleted(ctx, h, previous, "soft", p));
}

/**
 * Restores a fetched soft-deleted record: beforeRestore hooks, `_deleted_at` cleared, the
 * `restore` event, what its cascade soft-deleted, afterRestore hooks. Returns the record as
 * `p` reads it.
 */
export function restoreRecordRow(ctx: AppContext, h: CollectionHandle, previous: RecordJson, p: Principal, effects: RelationEffects, opts: WriteOptions = {}): Promise<RecordJson> {
  return setDeleted(ctx, h, previous, p, opts, false, () => effects.restored(ctx, h, previous._id as string, p));
}

/**
 * A soft delete (`deleting`) or a restore of a fetched record: its before* hooks, `_deleted_at` and
 * `_updated_at`, its event, then `relations` (the on_delete of a delete, the cascade's restore), the
 * stored record read back, its after* hooks.
 */
async function setDeleted(
  ctx: AppContext,
  h: CollectionHandle,
  previous: RecordJson,
  p: Principal,
  opts: WriteOptions,
  deleting: boolean,
  relations: () => Promise<unknown>,
): Promise<RecordJson> {
  const op = deleting ? "delete" : "restore";
  const event = hookEvent(ctx, h, op, p, previous, previous);
  await runHooks(h.hooks, deleting ? "beforeDelete" : "beforeRestore", event);
  const now = ctx.clock.now();
  const before = await adminView(ctx, h, previous, null);
  const deletedAt = deleting ? now : null;
  const version = await markDeleted(ctx, h.name, previous, deletedAt, now, opts.guard === true);
  stage(ctx, h.col, op, { ...before, _updated_at: version, _deleted_at: deletedAt }, before, now, p);
  await relations();
  const record = (await fetchRecord(ctx, h.col, previous._id as string))!;
  if (h.from.length) await attachRelationFields(ctx, h, [record], p);
  await runHooks(h.hooks, deleting ? "afterDelete" : "afterRestore", withRecord(event, record));
  return record;
}

/**
 * Hard-deletes a fetched record (active or soft-deleted): beforeDelete hooks, the row, the
 * `hard_delete` event carrying its last state, the relations' on_delete, afterDelete hooks.
 */
export async function removeRecord(
  ctx: AppContext,
  h: CollectionHandle,
  previous: RecordJson,
  p: Principal,
  effects: RelationEffects,
  opts: WriteOptions = {},
): Promise<void> {
  const event = hookEvent(ctx, h, "delete", p, previous, previous);
  await runHooks(h.hooks, "beforeDelete", event);
  const last = await adminView(ctx, h, previous, null);
  const values: (string | number | null)[] = [];
  const where = whereRow(previous, opts.guard === true, values);
  const done = await ctx.db.run(`DELETE FROM ${q(h.name)} WHERE ${where}`, values);
  if (opts.guard && done.changes === 0) throw preconditionFailed();
  // Files (CONTRACT §14): a hard-deleted record's files are deleted once this commits.
  if (fileFields(h.col).length) deleteDroppedFiles(ctx, h.col, previous, null);
  stage(ctx, h.col, "hard_delete", last, last, ctx.clock.now(), p);
  await effects.deleted(ctx, h, previous, "hard", p);
  await runHooks(h.hooks, "afterDelete", event);
}

/**
 * A relation changes a record's many_via links (a cascade or set_null removing the links to a
 * deleted record, a restore putting them back): the record's update hooks run around `change`
 * (one junction row removed or added) with `data` `{ [field]: the new id list }`, and the change
 * emits an `update` event and a new version (`_updated_at`). Nothing happens for a record that no longer exists.
 */
export async function relinkRecord(
  ctx: AppContext,
  h: CollectionHandle,
  id: string,
  link: { field: string; next: string[] },
  p: Principal,
  change: LinkChange,
): Promise<void> {
  const previous = await fetchRecord(ctx, h.col, id);
  if (!previous) return;
  const before = await adminView(ctx, h, previous, null);
  const data = { [link.field]: link.next };
  await runHooks(h.hooks, "beforeUpdate", hookEvent(ctx, h, "update", p, previous, previous, data));
  await changeLink(ctx, id, change);
  // A new version, as every update has (CONTRACT §15: the ETag changes, `_updated_at:gt:T` finds it).
  const now = ctx.clock.now();
  await ctx.db.run(`UPDATE ${q(h.name)} SET ${BUMP} WHERE "_id" = ?`, [now, now, id]);
  const record = await adminView(ctx, h, (await fetchRecord(ctx, h.col, id))!, null);
  stage(ctx, h.col, "update", record, before, now, p);
  await runHooks(h.hooks, "afterUpdate", hookEvent(ctx, h, "update", p, record, previous, data));
}
