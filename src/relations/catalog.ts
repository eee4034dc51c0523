import type { AppContext } from "../context.ts";
import { catalogView, noteCatalogChange, refreshCatalog, requireCollection, saveCollectionRow, touchCatalog } from "../collections/catalog.ts";
import { addColumn, createJunctionTable, dropJunctionTable } from "../collections/ddl.ts";
import { isValidFieldName, type Collection } from "../collections/types.ts";
import { inTransaction } from "../transaction.ts";
import { AppError, badRequest, conflict, notFound } from "../errors.ts";
import { newRecordId } from "../ids.ts";

export const RELATION_TYPES = ["one", "many", "many_via"] as const;
export const ON_DELETE = ["restrict", "cascade", "set_null"] as const;
export type RelationType = (typeof RELATION_TYPES)[number];
export type OnDelete = (typeof ON_DELETE)[number];

/** A relation as stored in `_relations` and returned by the admin API (CONTRACT §3, §6). */
export interface Relation {
  id: string;
  from_col: string;
  from_field: string;
  to_col: string;
  to_field: string | null;
  type: RelationType;
  on_delete: OnDelete;
  created_at: number;
}

interface RelationCache {
  list: Relation[];
  /** Relations by lower-cased `from_col`, and by lower-cased `from_col` NUL `from_field`. */
  from: Map<string, Relation[]>;
  byField: Map<string, Relation>;
}

const NONE: readonly Relation[] = Object.freeze([]);

/**
 * The relations read, by the collections of the catalog view they were read with: a view's reload makes a
 * new map. A write transaction whose view is still the shared one's map has changed neither (a change of
 * `_relations` marks its view stale first: noteCatalogChange), so what either reads serves both.
 */
const caches = new WeakMap<Map<string, Collection>, RelationCache>();

/**
 * The relation cache, read once per load of the catalog view the lookup reads: relation changes bump the
 * schema version (also from another process such as the CLI), which reloads the view, so the cache never
 * serves a stale list; a write transaction's relations stay with its own view. A request's lookups are map
 * reads, answered without a promise when nothing has to be read.
 */
function relationCache(ctx: AppContext): RelationCache | Promise<RelationCache> {
  const pending = refreshCatalog(ctx);
  if (pending) return pending.then(() => current(ctx) ?? loadRelations(ctx));
  return current(ctx) ?? loadRelations(ctx);
}

function current(ctx: AppContext): RelationCache | undefined {
  const view = catalogView(ctx);
  if (view.stale) return undefined;
  return caches.get(view.byName);
}

async function loadRelations(ctx: AppContext): Promise<RelationCache> {
  const view = catalogView(ctx);
  const byName = view.byName;
  const list = await ctx.db.all<Relation>(
    "SELECT id, from_col, from_field, to_col, to_field, type, on_delete, created_at FROM _relations ORDER BY created_at, id",
  );
  const from = new Map<string, Relation[]>();
  const byField = new Map<string, Relation>();
  for (const r of list) {
    const col = r.from_col.toLowerCase();
    from.set(col, [...(from.get(col) ?? []), r]);
    const key = `${col}\0${r.from_field.toLowerCase()}`;
    if (!byField.has(key)) byField.set(key, r);
  }
  const cache = { list, from, byField };
  // Kept only if the view was not reloaded while this read (the list may then be older than the view).
  if (view.byName === byName && !view.stale) caches.set(byName, cache);
  return cache;
}

/** Every relation (a shared array: do not change it). */
export function allRelations(ctx: AppContext): Relation[] | Promise<Relation[]> {
  const c = relationCache(ctx);
  return c instanceof Promise ? c.then((r) => r.list) : c.list;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The relations whose field lives on `col` (one, many and many_via declared from it); a shared array. */
export function relationsFrom(ctx: AppContext, col: string): readonly Relation[] | Promise<readonly Relation[]> {
  const c = relationCache(ctx);
  const pick = (r: RelationCache) => r.from.get(col.toLowerCase()) ?? NONE;
  return c instanceof Promise ? c.then(pick) : pick(c);
}

/** relationsFrom as this process last knew them, without asking the database (undefined when not cached; see lastKnownCollection). */
export function lastKnownRelationsFrom(ctx: AppContext, col: string): readonly Relation[] | undefined {
  const c = current(ctx);
  return c && (c.from.get(col.toLowerCase()) ?? NONE);
}

/** The relation declared on `col.field`, if any. */
export function relationOfField(ctx: AppContext, col: string, field: string): Relation | undefined | Promise<Relation | undefined> {
  const c = relationCache(ctx);
  const pick = (r: RelationCache) => r.byField.get(`${col.toLowerCase()}\0${field.toLowerCase()}`);
  return c instanceof Promise ? c.then(pick) : pick(c);
}

/**
 * A synchronous lookup of the relation declared on `col.field`, over the relations (and the
 * catalog) as they are now: for code that must not wait per lookup, such as the query planner.
 */
export async function relationLookup(ctx: AppContext): Promise<(col: string, field: string) => Relation | undefined> {
  const { byField } = await relationCache(ctx);
  return (col, field) => byField.get(`${col.toLowerCase()}\0${field.toLowerCase()}`);
}

/** The junction table of a many_via relation; its name is built from the relation's generated id only. */
export function junctionTable(rel: Pick<Relation, "id">): string {
  return `_rel_${rel.id.toLowerCase()}`;
}

/** A new relation as its schema checked it; an optional field given as null or "" counts as not given. */
export interface NewRelation {
  from_col: string;
  from_field: string;
  to_col: string;
  type: RelationType;
  on_delete?: OnDelete | null | "";
  to_field?: string | null;
}

function fieldName(name: string, key: string): string {
  if (!isValidFieldName(name))
    throw badRequest(`${key} "${name.slice(0, 80)}" is not a valid field name: use a letter then letters, digits or _ (at most 64)`);
  return name;
}

/** The stored type of a field, or null when the collection has not seen it yet. */
function storedType(col: Collection, field: string): string | null {
  return col.fieldMap.get(field.toLowerCase())?.type ?? null;
}

/**
 * `POST /admin/relations`: validates and stores a relation. 400 for a bad body, type,
 * on_delete, field name or incompatible field; 404 for an unknown collection; 409 when
 * `from_col.from_field` already carries a relation.
 */
export async function createRelation(ctx: AppContext, body: NewRelation): Promise<Relation> {
  const { from_col: fromName, from_field: fromFieldRaw, to_col: toName, type } = body;
  const onDelete = body.on_delete || "restrict";
  const toFieldRaw = body.to_field || null;
  const fromField = fieldName(fromFieldRaw, "from_field");
  const from = await requireCollection(ctx, fromName);
  const to = await requireCollection(ctx, toName);

  let toField: string | null = null;
  const existing = storedType(from, fromField);
  if (type === "one") {
    if (toFieldRaw !== null && toFieldRaw !== "_id") throw badRequest('to_field of a one relation can only be "_id"');
    toField = toFieldRaw;
    if (existing !== null && existing !== "text")
      throw badRequest(`field "${fromField}" of "${from.name}" holds ${existing} values; a one relation needs a text field`);
  } else {
    if (existing !== null)
      throw badRequest(`field "${fromField}" of "${from.name}" already stores values; a ${type} relation needs a new, virtual field`);
    if (type === "many") toField = await resolveManyToField(ctx, from, to, toFieldRaw);
    else if (toFieldRaw !== null) throw badRequest("to_field does not apply to a many_via relation");
  }

  return await inTransaction(ctx, async () => {
    if (await relationOfField(ctx, from.name, fromField))
      throw conflict(`a relation on "${from.name}.${fromField}" already exists`);
    const rel: Relation = {
      id: newRecordId(ctx.clock.now()),
      from_col: from.name,
      from_field: existing !== null ? from.fieldMap.get(fromField.toLowerCase())!.name : fromField,
      to_col: to.name,
      to_field: toField,
      type,
      on_delete: onDelete,
      created_at: ctx.clock.now(),
    };
    noteCatalogChange(ctx);
    await ctx.db.run(
      "INSERT INTO _relations (id, from_col, from_field, to_col, to_field, type, on_delete, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      [rel.id, rel.from_col, rel.from_field, rel.to_col, rel.to_field, rel.type, rel.on_delete, rel.created_at],
    );
    // The id-holding column exists from the start, typed text, so a first numeric value cannot fix another type.
    if (type === "one" && existing === null) await addTextField(ctx, from, fromField);
    if (type === "many" && storedType(to, toField!) === null) await addTextField(ctx, to, toField!);
    if (type === "many_via") {
      await createJunctionTable(ctx.db, junctionTable(rel));
    }
    await touchCatalog(ctx);
    return rel;
  });
}

async function addTextField(ctx: AppContext, col: Collection, field: string): Promise<void> {
  await addColumn(ctx.db, col.name, field, "text");
  await saveCollectionRow(ctx, { ...col, fields: [...col.fields, { name: field, type: "text" }] }, { fields: "add" });
}

/** The `to_field` of a many relation: the given one (a text field or a new name), or the field of a one relation back. */
async function resolveManyToField(ctx: AppContext, from: Collection, to: Collection, given: string | null): Promise<string> {
  if (given !== null) {
    fieldName(given, "to_field");
    const t = storedType(to, given);
    if (t !== null && t !== "text") throw badRequest(`field "${given}" of "${to.name}" holds ${t} values; it cannot hold ids`);
    return to.fieldMap.get(given.toLowerCase())?.name ?? given;
  }
  const back = (await allRelations(ctx)).filter((r) => r.type === "one" && same(r.from_col, to.name) && same(r.to_col, from.name));
  if (back.length === 1) return back[0].from_field;
  if (back.length === 0)
    throw badRequest(`to_field is required: no one relation from "${to.name}" to "${from.name}" names the field`);
  throw badRequest(`to_field is required: several one relations from "${to.name}" to "${from.name}" exist`);
}

/** `GET /admin/relations`. */
export async function listRelations(ctx: AppContext): Promise<{ items: Relation[] }> {
  return { items: await allRelations(ctx) };
}

/** `DELETE /admin/relations/:id`: removes the relation (and a many_via junction table); 404 for an unknown id. */
export async function deleteRelation(ctx: AppContext, id: string): Promise<{ ok: true }> {
  return await inTransaction(ctx, async () => {
    const rel = (await allRelations(ctx)).find((r) => r.id === id);
    if (!rel) throw notFound("relation not found");
    await dropRelation(ctx, rel);
    await touchCatalog(ctx);
    return { ok: true as const };
  });
}

async function dropRelation(ctx: AppContext, rel: Relation): Promise<void> {
  noteCatalogChange(ctx);
  await ctx.db.run("DELETE FROM _relations WHERE id = ?", [rel.id]);
  await ctx.db.run("DELETE FROM _relation_cascades WHERE relation_id = ?", [rel.id]);
  if (rel.type === "many_via") await dropJunctionTable(ctx.db, junctionTable(rel));
}

/** Removes every relation from or to a collection being dropped, inside the caller's transaction. */
export async function dropRelationsOf(ctx: AppContext, col: string): Promise<void> {
  for (const rel of await allRelations(ctx)) if (same(rel.from_col, col) || same(rel.to_col, col)) await dropRelation(ctx, rel);
  await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? OR rec_col = ?", [col, col]);
  await touchCatalog(ctx);
}

/** 409 raised by `restrict`. */
export const restricted = (n: number, col: string, field: string) =>
  new AppError(
    409,
    "conflict",
    `this record cannot be deleted: ${n} active record${n === 1 ? "" : "s"} of "${col}" point${n === 1 ? "s" : ""} at it through "${field}" (on_delete restrict)`,
  );
