import type { Engine } from "../db/engine.ts";
import { ADMIN, type Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { q } from "../db/ident.ts";
import { checkFields, ensureFields } from "../collections/grow.ts";
import { shapeOf, type BodyShape, type Collection } from "../collections/types.ts";
import { validateFieldRules } from "../collections/validate.ts";
import { ValidationError, type FieldError } from "../errors.ts";
import type { ChangeAction, ChangeEvent } from "../events/bus.ts";
import { hookAuth, runHooks } from "../hooks/run.ts";
import type { HookEvent } from "../hooks/types.ts";
import { newRecordId } from "../ids.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { prepareRelations } from "../relations/check.ts";
import { relationsFrom, type Relation } from "../relations/catalog.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { encodeValue, userFields, userFieldsShared } from "./codec.ts";
import { changeLink, writeLinks, type LinkChange } from "./store-junction.ts";
import { deleteDroppedFiles, fileFields, fileValueErrors } from "../files/values.ts";

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
  deleted(ctx: AppContext, col: Collection, record: RecordJson, mode: "soft" | "hard", p: Principal): Promise<void>;
  /** After the row was restored: brings back what its cascade soft-deleted. */
  restored(ctx: AppContext, col: Collection, id: string, p: Principal): Promise<void>;
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
async function adminView(ctx: AppContext, col: Collection, record: RecordJson, attachedFor: Principal | null): Promise<RecordJson> {
  const copy = { ...record };
  if (attachedFor?.kind === "admin") return copy;
  const rels = await relationsFrom(ctx, col.name);
  if (!rels.length || (attachedFor && !rels.some((r) => r.type === "many"))) return copy;
  return (await attachRelationFields(ctx, col, [copy], ADMIN))[0];
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

function hookEvent(col: Collection, op: HookEvent["op"], p: Principal, record: RecordJson | null, previous: RecordJson | null, data: Record<string, unknown> | null = null): HookEvent {
  return { collection: col.name, op, data, record, previous, auth: hookAuth(p) };
}

/** Rows of a bulk insert not yet written: see `insertRecord`'s `pending` and `flushRows`. */
export interface PendingRow {
  table: string;
  fields: string[];
  values: (string | number | null)[];
}

/**
 * Inserts one record: beforeCreate hooks, names and types, field rules, new columns, the row,
 * its links, afterCreate hooks, the `create` event. Returns the record as `p` reads it.
 * With `pending`, the row of a record of a collection without relations is added there instead of
 * written, for `flushRows` to write with its neighbours in one statement (before the transaction ends).
 * A record of a collection without hooks or relations whose fields exist (most writes, every record of a
 * bulk insert after the first) is answered without a promise: see `insertPlain`.
 */
export function insertRecord(ctx: AppContext, col: Collection, body: Record<string, unknown>, p: Principal, pending?: PendingRow[]): RecordJson | Promise<RecordJson> {
  const rels = ctx.hooks.list.length === 0 ? relationsFrom(ctx, col.name) : null;
  // A lookup that had to ask the database is handed on and awaited there (a rejected one must reach the caller).
  if (rels === null || rels instanceof Promise || rels.length) return insertLinked(ctx, col, body, p, pending, rels ?? undefined);
  // Without hooks nothing changes the body's fields: they are not copied.
  const clean = userFieldsShared(body);
  const grown = ensureFields(ctx, col, clean);
  return grown instanceof Promise ? grown.then((c) => insertPlain(ctx, c, clean, p, pending)) : insertPlain(ctx, grown, clean, p, pending);
}

/**
 * The rest of `insertRecord` for a collection without hooks or relations, once it has the body's fields:
 * the record is final as built (no relation fields to attach for anyone). Kept apart from the general
 * case, and not async, so that the hot path of bulk inserts is one small function (the JIT's optimizing
 * tier compiles an async function of the general case's size in about 200 ms of CPU).
 */
export function insertPlain(ctx: AppContext, col: Collection, clean: Record<string, unknown>, p: Principal, pending: PendingRow[] | undefined): RecordJson | Promise<RecordJson> {
  const row = newRow(ctx, col, clean, p, NO_ERRORS);
  const record = insertedRecord(col, row.shape, row.values, clean);
  const written = () => {
    stage(ctx, col, "create", { ...record }, undefined, row.now, p);
    return record;
  };
  if (!pending) return ctx.db.run(insertSql(ctx, col.name, row.shape.names), row.values).then(written);
  pending.push({ table: col.name, fields: row.shape.names, values: row.values });
  return written();
}

const NO_ERRORS: readonly FieldError[] = [];

/** Where `insertPlainRun` stopped: at the end, or at a record (`next`) whose new fields are being added. */
export type PlainRun = { next: number; grown?: undefined } | { next: number; grown: Promise<Collection>; clean: Record<string, unknown> };

/**
 * The records `bodies[from..]` of a bulk insert into a collection without hooks or relations, as
 * `insertRecord` with `pending` inserts each; the caller has checked both, and looked `col` up, inside the
 * transaction. What `insertRecord` looks up per record for its collection is so looked up once per bulk,
 * and the loop is the work of each record alone. The records go to `out`, their rows to `pending`. It stops
 * at a record that names fields the collection does not have yet (their columns are added asynchronously):
 * the caller awaits `grown` and finishes that record with `insertPlain`. An error of record i is thrown
 * as `onError(err, i)`.
 */
export function insertPlainRun(
  ctx: AppContext,
  col: Collection,
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
      const grown = checkFields(ctx, col, clean);
      if (grown !== col) return { next: i, grown: Promise.resolve(grown), clean };
      out.push(insertPlain(ctx, col, clean, p, pending) as RecordJson);
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
function newRow(ctx: AppContext, col: Collection, clean: Record<string, unknown>, p: Principal, errors: readonly FieldError[]) {
  const failed = validateFieldRules(col, clean, "create");
  if (errors.length) failed.push(...errors);
  // Files (CONTRACT §14): a file field holds only names just uploaded.
  if (fileFields(col).length) failed.push(...fileValueErrors(col, clean, null));
  if (failed.length) throw new ValidationError(failed);
  const now = ctx.clock.now();
  const shape = shapeOf(col, clean);
  const values: (string | number | null)[] = [newRecordId(now), now, now, p.kind === "user" ? p.userId : null, null];
  let i = 0;
  for (const k in clean) {
    const def = shape.defs[i++];
    if (def) values.push(encodeValue(def.type, clean[k]));
  }
  return { now, shape, values };
}

/** `insertRecord` with hooks or relations (or with `found`, the relations lookup, still running). */
async function insertLinked(
  ctx: AppContext,
  col: Collection,
  body: Record<string, unknown>,
  p: Principal,
  pending: PendingRow[] | undefined,
  found: readonly Relation[] | Promise<readonly Relation[]> | undefined,
): Promise<RecordJson> {
  const hooked = ctx.hooks.list.length > 0;
  const data = hooked ? userFields(body) : userFieldsShared(body);
  if (hooked) runHooks(ctx, col, "beforeCreate", hookEvent(col, "create", p, null, null, data));
  const clean = hooked ? userFields(data) : data;
  const rels = await (found ?? relationsFrom(ctx, col.name));
  const relations = rels.length ? await prepareRelations(ctx, col, clean, p) : { stored: clean, errors: [], links: [] };
  col = await ensureFields(ctx, col, relations.stored);
  const row = newRow(ctx, col, clean, p, relations.errors);
  const id = row.values[0] as string;
  const plain = rels.length === 0;
  if (pending && plain) pending.push({ table: col.name, fields: row.shape.names, values: row.values });
  else await ctx.db.run(insertSql(ctx, col.name, row.shape.names), row.values);
  if (relations.links.length) await writeLinks(ctx, relations, id);
  const inserted = insertedRecord(col, row.shape, row.values, clean);
  const record = plain ? inserted : (await attachRelationFields(ctx, col, [inserted], p))[0];
  stage(ctx, col, "create", plain ? { ...record } : await adminView(ctx, col, record, p), undefined, row.now, p);
  if (hooked) runHooks(ctx, col, "afterCreate", hookEvent(col, "create", p, record, null, clean));
  return record;
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
  col: Collection,
  previous: RecordJson,
  body: Record<string, unknown>,
  p: Principal,
  forced?: string,
): Promise<RecordJson> {
  const data = userFields(body);
  const before = await adminView(ctx, col, previous, null);
  runHooks(ctx, col, "beforeUpdate", hookEvent(col, "update", p, previous, previous, data));
  const clean = userFields(data);
  const relations = await prepareRelations(ctx, col, clean, p);
  col = await ensureFields(ctx, col, relations.stored);
  let checked = clean;
  if (forced !== undefined && clean[forced] === null) {
    checked = { ...clean };
    delete checked[forced];
  }
  const errors = [...validateFieldRules(col, checked, "update"), ...relations.errors];
  // Files (CONTRACT §14): a file field holds only names it held or just uploaded.
  if (fileFields(col).length) errors.push(...fileValueErrors(col, clean, previous));
  if (errors.length) throw new ValidationError(errors);
  const now = ctx.clock.now();
  const sets = ['"_updated_at" = ?'];
  const values: (string | number | null)[] = [Math.max(now, previous._updated_at as number)];
  for (const [k, v] of Object.entries(clean)) {
    const def = col.fieldMap.get(k.toLowerCase());
    if (!def) continue;
    sets.push(`${q(def.name)} = ?`);
    values.push(encodeValue(def.type, v));
  }
  values.push(previous._id as string);
  await ctx.db.run(`UPDATE ${q(col.name)} SET ${sets.join(", ")} WHERE "_id" = ?`, [...values]);
  // Files (CONTRACT §14): a replaced or removed file is deleted once this commits.
  if (fileFields(col).length) deleteDroppedFiles(ctx, col, previous, clean);
  await writeLinks(ctx, relations, previous._id as string);
  const record = (await attachRelationFields(ctx, col, [(await fetchRecord(ctx, col, previous._id as string))!], p))[0];
  stage(ctx, col, "update", await adminView(ctx, col, record, p), before, now, p);
  runHooks(ctx, col, "afterUpdate", hookEvent(col, "update", p, record, previous, clean));
  return record;
}

/** Applies a patch to a fetched active record (update and batch). */
export async function updateRecordRow(
  ctx: AppContext,
  col: Collection,
  previous: RecordJson,
  body: Record<string, unknown>,
  p: Principal,
): Promise<RecordJson> {
  return await writeUpdate(ctx, col, previous, body, p);
}

/** A relation's `set_null`: clears `field` of a fetched record, through its update hooks. */
export async function setFieldNull(ctx: AppContext, col: Collection, previous: RecordJson, field: string, p: Principal): Promise<RecordJson> {
  return await writeUpdate(ctx, col, previous, { [field]: null }, p, field);
}

/**
 * Soft-deletes a fetched active record: beforeDelete hooks, `_deleted_at`, the `delete` event,
 * the relations' on_delete (cascades write through this store), afterDelete hooks. Returns the
 * record as `p` reads it.
 */
export async function softDeleteRecord(ctx: AppContext, col: Collection, previous: RecordJson, p: Principal, effects: RelationEffects): Promise<RecordJson> {
  const event = hookEvent(col, "delete", p, previous, previous);
  runHooks(ctx, col, "beforeDelete", event);
  const now = ctx.clock.now();
  const before = await adminView(ctx, col, previous, null);
  await ctx.db.run(`UPDATE ${q(col.name)} SET "_deleted_at" = ? WHERE "_id" = ?`, [now, previous._id as string]);
  stage(ctx, col, "delete", { ...before, _deleted_at: now }, before, now, p);
  await effects.deleted(ctx, col, previous, "soft", p);
  const record = (await fetchRecord(ctx, col, previous._id as string))!;
  await attachRelationFields(ctx, col, [record], p);
  runHooks(ctx, col, "afterDelete", { ...event, record });
  return record;
}

/**
 * Restores a fetched soft-deleted record: beforeRestore hooks, `_deleted_at` cleared, the
 * `restore` event, what its cascade soft-deleted, afterRestore hooks. Returns the record as
 * `p` reads it.
 */
export async function restoreRecordRow(ctx: AppContext, col: Collection, previous: RecordJson, p: Principal, effects: RelationEffects): Promise<RecordJson> {
  const event = hookEvent(col, "restore", p, previous, previous);
  runHooks(ctx, col, "beforeRestore", event);
  const now = ctx.clock.now();
  const before = await adminView(ctx, col, previous, null);
  await ctx.db.run(`UPDATE ${q(col.name)} SET "_deleted_at" = NULL WHERE "_id" = ?`, [previous._id as string]);
  stage(ctx, col, "restore", { ...before, _deleted_at: null }, before, now, p);
  await effects.restored(ctx, col, previous._id as string, p);
  const record = (await attachRelationFields(ctx, col, [(await fetchRecord(ctx, col, previous._id as string))!], p))[0];
  runHooks(ctx, col, "afterRestore", { ...event, record });
  return record;
}

/**
 * Hard-deletes a fetched record (active or soft-deleted): beforeDelete hooks, the row, the
 * `hard_delete` event carrying its last state, the relations' on_delete, afterDelete hooks.
 */
export async function removeRecord(ctx: AppContext, col: Collection, previous: RecordJson, p: Principal, effects: RelationEffects): Promise<void> {
  const event = hookEvent(col, "delete", p, previous, previous);
  runHooks(ctx, col, "beforeDelete", event);
  const last = await adminView(ctx, col, previous, null);
  await ctx.db.run(`DELETE FROM ${q(col.name)} WHERE "_id" = ?`, [previous._id as string]);
  // Files (CONTRACT §14): a hard-deleted record's files are deleted once this commits.
  if (fileFields(col).length) deleteDroppedFiles(ctx, col, previous, null);
  stage(ctx, col, "hard_delete", last, last, ctx.clock.now(), p);
  await effects.deleted(ctx, col, previous, "hard", p);
  runHooks(ctx, col, "afterDelete", event);
}

/**
 * A relation changes a record's many_via links (a cascade or set_null removing the links to a
 * deleted record, a restore putting them back): the record's update hooks run around `change`
 * (one junction row removed or added) with `data` `{ [field]: the new id list }`, and the change
 * emits an `update` event. `_updated_at` stays, as for any change of links alone. Nothing
 * happens for a record that no longer exists.
 */
export async function relinkRecord(
  ctx: AppContext,
  col: Collection,
  id: string,
  link: { field: string; next: string[] },
  p: Principal,
  change: LinkChange,
): Promise<void> {
  const previous = await fetchRecord(ctx, col, id);
  if (!previous) return;
  const before = await adminView(ctx, col, previous, null);
  const data = { [link.field]: link.next };
  runHooks(ctx, col, "beforeUpdate", hookEvent(col, "update", p, previous, previous, data));
  await changeLink(ctx, id, change);
  const record = await adminView(ctx, col, (await fetchRecord(ctx, col, id))!, null);
  stage(ctx, col, "update", record, before, ctx.clock.now(), p);
  runHooks(ctx, col, "afterUpdate", hookEvent(col, "update", p, record, previous, data));
}
