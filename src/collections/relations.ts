import type { AppContext } from "../context.ts";
import { ruleCatalog, withoutRelation } from "../rules/expr/catalog.ts";
import { refuseIfRulesBreak } from "../rules/naming.ts";
import { currentCatalog, deleteRelationRow, insertRelationRow, requireCollection, saveCollectionRow, touchCatalog } from "../catalog/catalog.ts";
import { addColumn, createJunctionTable, dropJunctionTable } from "./ddl.ts";
import { isValidFieldName, junctionTable, type Collection, type OnDelete, type Relation, type RelationType } from "../catalog/types.ts";
import { inTransaction } from "../transaction.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
import { newRecordId } from "../ids.ts";

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

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
    if ((await currentCatalog(ctx)).relationOf(from.name, fromField))
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
    await insertRelationRow(ctx, rel);
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
  const back = (await currentCatalog(ctx)).relations.filter((r) => r.type === "one" && same(r.from_col, to.name) && same(r.to_col, from.name));
  if (back.length === 1) return back[0].from_field;
  if (back.length === 0)
    throw badRequest(`to_field is required: no one relation from "${to.name}" to "${from.name}" names the field`);
  throw badRequest(`to_field is required: several one relations from "${to.name}" to "${from.name}" exist`);
}

/** `GET /admin/relations`. */
export async function listRelations(ctx: AppContext): Promise<{ items: Relation[] }> {
  return { items: [...(await currentCatalog(ctx)).relations] };
}

/** `DELETE /admin/relations/:id`: removes the relation (and a many_via junction table); 404 for an unknown id. */
export async function deleteRelation(ctx: AppContext, id: string): Promise<{ ok: true }> {
  return await inTransaction(ctx, async () => {
    const rel = (await currentCatalog(ctx)).relations.find((r) => r.id === id);
    if (!rel) throw notFound("relation not found");
    refuseIfRulesBreak(withoutRelation(await ruleCatalog(ctx), rel), `relation ${rel.from_col}.${rel.from_field} cannot be deleted`);
    await dropRelation(ctx, rel);
    await touchCatalog(ctx);
    return { ok: true as const };
  });
}

async function dropRelation(ctx: AppContext, rel: Relation): Promise<void> {
  await deleteRelationRow(ctx, rel.id);
  await ctx.db.run("DELETE FROM _relation_cascades WHERE relation_id = ?", [rel.id]);
  if (rel.type === "many_via") await dropJunctionTable(ctx.db, junctionTable(rel));
}

/** Removes every relation from or to a collection being dropped, inside the caller's transaction. */
export async function dropRelationsOf(ctx: AppContext, col: string): Promise<void> {
  for (const rel of (await currentCatalog(ctx)).relations) if (same(rel.from_col, col) || same(rel.to_col, col)) await dropRelation(ctx, rel);
  await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? OR rec_col = ?", [col, col]);
  await touchCatalog(ctx);
}
