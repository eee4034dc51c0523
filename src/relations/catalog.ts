import { asc, eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { refreshCatalog, requireCollection, saveCollectionRow, touchCatalog } from "../collections/catalog.ts";
import { addColumn, q } from "../collections/ddl.ts";
import { isValidFieldName, type Collection } from "../collections/types.ts";
import { inTransaction } from "../db/tx.ts";
import { relations as relationsTable } from "../db/schema.ts";
import { AppError, badRequest, conflict, notFound } from "../errors.ts";
import { newRecordId } from "../records/ids.ts";

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
  schemaVersion: number;
  list: Relation[];
  /** Relations by lower-cased `from_col`, and by lower-cased `from_col` NUL `from_field`. */
  from: Map<string, Relation[]>;
  byField: Map<string, Relation>;
}

const CACHE_KEY = "relations";
const NONE: readonly Relation[] = Object.freeze([]);

/**
 * The relation cache, built once per catalog schema version: relation changes bump that version
 * (also from another process such as the CLI), so the cache never serves a stale list, and a
 * request's lookups are map reads.
 */
function relationCache(ctx: AppContext): RelationCache {
  refreshCatalog(ctx);
  const cached = ctx.cache.get(CACHE_KEY) as RelationCache | undefined;
  if (cached && cached.schemaVersion === ctx.catalog.schemaVersion && !ctx.catalog.stale) return cached;
  const rows = ctx.db.select().from(relationsTable).orderBy(asc(relationsTable.createdAt), asc(relationsTable.id)).all();
  const list = rows.map(
    (r): Relation => ({
      id: r.id,
      from_col: r.fromCol,
      from_field: r.fromField,
      to_col: r.toCol,
      to_field: r.toField,
      type: r.type as RelationType,
      on_delete: r.onDelete as OnDelete,
      created_at: r.createdAt,
    }),
  );
  const from = new Map<string, Relation[]>();
  const byField = new Map<string, Relation>();
  for (const r of list) {
    const col = r.from_col.toLowerCase();
    from.set(col, [...(from.get(col) ?? []), r]);
    const key = `${col}\0${r.from_field.toLowerCase()}`;
    if (!byField.has(key)) byField.set(key, r);
  }
  const cache = { schemaVersion: ctx.catalog.schemaVersion, list, from, byField };
  ctx.cache.set(CACHE_KEY, cache);
  return cache;
}

/** Every relation (a shared array: do not change it). */
export function allRelations(ctx: AppContext): Relation[] {
  return relationCache(ctx).list;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The relations whose field lives on `col` (one, many and many_via declared from it); a shared array. */
export function relationsFrom(ctx: AppContext, col: string): readonly Relation[] {
  return relationCache(ctx).from.get(col.toLowerCase()) ?? NONE;
}

/** The relation declared on `col.field`, if any. */
export function relationOfField(ctx: AppContext, col: string, field: string): Relation | undefined {
  return relationCache(ctx).byField.get(`${col.toLowerCase()}\0${field.toLowerCase()}`);
}

/** The junction table of a many_via relation; its name is built from the relation's generated id only. */
export function junctionTable(rel: Pick<Relation, "id">): string {
  return `_rel_${rel.id.toLowerCase()}`;
}

function str(body: Record<string, unknown>, key: string, required: boolean): string | null {
  const v = body[key];
  if (v === undefined || v === null || v === "") {
    if (required) throw badRequest(`${key} is required`);
    return null;
  }
  if (typeof v !== "string") throw badRequest(`${key} must be a string`);
  return v;
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
export function createRelation(ctx: AppContext, input: unknown): Relation {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object");
  const body = input as Record<string, unknown>;
  const fromName = str(body, "from_col", true)!;
  const fromFieldRaw = str(body, "from_field", true)!;
  const toName = str(body, "to_col", true)!;
  const type = str(body, "type", true)! as RelationType;
  if (!RELATION_TYPES.includes(type)) throw badRequest(`type must be one of: ${RELATION_TYPES.join(", ")}`);
  const onDelete = (str(body, "on_delete", false) ?? "restrict") as OnDelete;
  if (!ON_DELETE.includes(onDelete)) throw badRequest(`on_delete must be one of: ${ON_DELETE.join(", ")}`);
  const toFieldRaw = str(body, "to_field", false);
  const fromField = fieldName(fromFieldRaw, "from_field");
  const from = requireCollection(ctx, fromName);
  const to = requireCollection(ctx, toName);

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
    if (type === "many") toField = resolveManyToField(ctx, from, to, toFieldRaw);
    else if (toFieldRaw !== null) throw badRequest("to_field does not apply to a many_via relation");
  }

  return inTransaction(ctx, () => {
    if (relationOfField(ctx, from.name, fromField))
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
    ctx.db
      .insert(relationsTable)
      .values({
        id: rel.id,
        fromCol: rel.from_col,
        fromField: rel.from_field,
        toCol: rel.to_col,
        toField: rel.to_field,
        type: rel.type,
        onDelete: rel.on_delete,
        createdAt: rel.created_at,
      })
      .run();
    // The id-holding column exists from the start, typed text, so a first numeric value cannot fix another type.
    if (type === "one" && existing === null) addTextField(ctx, from, fromField);
    if (type === "many" && storedType(to, toField!) === null) addTextField(ctx, to, toField!);
    if (type === "many_via") {
      const t = q(junctionTable(rel));
      ctx.sqlite.exec(
        `CREATE TABLE ${t} ("from_id" TEXT NOT NULL, "to_id" TEXT NOT NULL, "pos" INTEGER NOT NULL, PRIMARY KEY ("from_id", "to_id")) WITHOUT ROWID`,
      );
      ctx.sqlite.exec(`CREATE INDEX ${q(`${junctionTable(rel)}_to`)} ON ${t} ("to_id", "from_id")`);
    }
    touchCatalog(ctx);
    return rel;
  });
}

function addTextField(ctx: AppContext, col: Collection, field: string): void {
  addColumn(ctx.sqlite, col.name, field, "text");
  saveCollectionRow(ctx, { ...col, fields: [...col.fields, { name: field, type: "text" }] });
}

/** The `to_field` of a many relation: the given one (a text field or a new name), or the field of a one relation back. */
function resolveManyToField(ctx: AppContext, from: Collection, to: Collection, given: string | null): string {
  if (given !== null) {
    fieldName(given, "to_field");
    const t = storedType(to, given);
    if (t !== null && t !== "text") throw badRequest(`field "${given}" of "${to.name}" holds ${t} values; it cannot hold ids`);
    return to.fieldMap.get(given.toLowerCase())?.name ?? given;
  }
  const back = allRelations(ctx).filter((r) => r.type === "one" && same(r.from_col, to.name) && same(r.to_col, from.name));
  if (back.length === 1) return back[0].from_field;
  if (back.length === 0)
    throw badRequest(`to_field is required: no one relation from "${to.name}" to "${from.name}" names the field`);
  throw badRequest(`to_field is required: several one relations from "${to.name}" to "${from.name}" exist`);
}

/** `GET /admin/relations`. */
export function listRelations(ctx: AppContext): { items: Relation[] } {
  return { items: allRelations(ctx) };
}

/** `DELETE /admin/relations/:id`: removes the relation (and a many_via junction table); 404 for an unknown id. */
export function deleteRelation(ctx: AppContext, id: string): { ok: true } {
  return inTransaction(ctx, () => {
    const rel = allRelations(ctx).find((r) => r.id === id);
    if (!rel) throw notFound("relation not found");
    dropRelation(ctx, rel);
    touchCatalog(ctx);
    return { ok: true as const };
  });
}

function dropRelation(ctx: AppContext, rel: Relation): void {
  ctx.db.delete(relationsTable).where(eq(relationsTable.id, rel.id)).run();
  ctx.sqlite.query("DELETE FROM _relation_cascades WHERE relation_id = ?").run(rel.id);
  if (rel.type === "many_via") ctx.sqlite.exec(`DROP TABLE IF EXISTS ${q(junctionTable(rel))}`);
}

/** Removes every relation from or to a collection being dropped, inside the caller's transaction. */
export function dropRelationsOf(ctx: AppContext, col: string): void {
  for (const rel of allRelations(ctx)) if (same(rel.from_col, col) || same(rel.to_col, col)) dropRelation(ctx, rel);
  ctx.sqlite.query("DELETE FROM _relation_cascades WHERE cause_col = ? OR rec_col = ?").run(col, col);
  touchCatalog(ctx);
}

/** 409 raised by `restrict`. */
export const restricted = (n: number, col: string, field: string) =>
  new AppError(
    409,
    "conflict",
    `this record cannot be deleted: ${n} active record${n === 1 ? "" : "s"} of "${col}" point${n === 1 ? "s" : ""} at it through "${field}" (on_delete restrict)`,
  );
