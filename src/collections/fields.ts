import type { AppContext } from "../context.ts";
import { AppError, badRequest, conflict, notFound } from "../errors.ts";
import { describeRules, refuseIfRulesBreak, rulesNaming } from "../rules/naming.ts";
import { ruleCatalog, withCollection } from "../rules/expr/catalog.ts";
import { dropFtsObjects, ftsAfterNewFields, indexedFields } from "../search/fts.ts";
import { inTransaction } from "../transaction.ts";
import { collectionToJson, currentCatalog, findCollection, listCollections, noteCatalogChange, requireCollection, saveCollectionRow } from "../catalog/catalog.ts";
import { convertValue, storedToValue, valueToFill } from "./convert.ts";
import { addColumn, beginColumnChange, columnFill, createIndex, dropColumn, dropIndex, readColumnPage, renameColumn } from "./ddl.ts";
import { execAll } from "../db/engine.ts";
import { parseFieldDecl, parseFieldType } from "../catalog/field-types.ts";
import { MAX_FIELDS, isValidFieldName, type Collection, type FieldDef, type FieldType, type IndexDef, type Relation } from "../catalog/types.ts";
import type { CollectionJson } from "./admin.ts";

// Declared fields and their changes (CONTRACT §13): add, rename, retype (every stored value converts, or nothing
// changes) and drop, each in one transaction on either engine, with what names the field following it (field
// rules, indexes, the full-text index, relations). The `…In` functions run inside the caller's transaction on the
// collection as that transaction reads it (a schema apply makes several changes in one); the others are the admin
// API's and the CLI's, a transaction each. A field that a record sets first still appears by itself (grow.ts).

/** Rows read, converted and written per statement while a field's values convert. */
const CONVERT_CHUNK = 5000;
/** Earlier names kept per field (FieldDef.was). */
const MAX_WAS = 8;
/** The column a retype fills before it takes the field's place: it starts with `_`, which no user field can. */
const RETYPE_COLUMN = "_retype";

const fieldWord = (n: number) => (n === 1 ? "value" : "values");
const lower = (s: string) => s.toLowerCase();
const same = (a: string, b: string) => lower(a) === lower(b);

/** A turn of the event loop between chunks of a long conversion: other requests' reads go on meanwhile. */
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Reads a list of field declarations (a collection's create, a schema file): 400 for a bad one, a name given
 * twice (letter case aside) or more than MAX_FIELDS.
 */
export function parseFieldList(input: unknown, where = "fields"): FieldDef[] {
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input)) throw badRequest(`${where} must be an array of { name, type }`);
  if (input.length > MAX_FIELDS) throw badRequest(`a collection has at most ${MAX_FIELDS} fields`);
  const defs = input.map((f, i) => parseFieldDecl(f, `${where}[${i}]`));
  const seen = new Set<string>();
  for (const d of defs) {
    if (seen.has(lower(d.name))) throw badRequest(`${where}: the field "${d.name}" is declared twice`);
    seen.add(lower(d.name));
  }
  return defs;
}

/** The field of that name (letter case aside), or 404; a system field 400. */
export function requireField(col: Collection, field: string): FieldDef {
  if (field.startsWith("_")) throw badRequest(`"${field.slice(0, 80)}" is a system field: it cannot be changed`);
  const def = col.fieldMap.get(lower(field));
  if (!def) throw notFound(`field "${field.slice(0, 80)}" not found in collection "${col.name}"`);
  return def;
}

/**
 * Runs a change of the fields of collection `name` in one transaction: the engine's opening for a change of
 * columns first (PostgreSQL locks the table before anything is read), then `fn` on the collection as the
 * transaction reads it. Answers the collection object as committed.
 */
async function changeFields(ctx: AppContext, name: string, fn: (col: Collection) => Promise<void>): Promise<CollectionJson> {
  const before = await requireCollection(ctx, name);
  try {
    await inTransaction(ctx, async () => {
      await beginColumnChange(ctx.db, before.name);
      await fn(await requireCollection(ctx, before.name));
    });
  } catch (err) {
    // Dropped meanwhile (on PostgreSQL the lock then fails): 404, as a moment later.
    if (!(err instanceof AppError) && !(await findCollection(ctx, before.name))) throw notFound(`collection "${name}" not found`);
    throw err;
  }
  return collectionToJson(await requireCollection(ctx, before.name));
}

/** `POST /admin/collections/:name/fields { name, type }`: 201 the collection; 409 when the name is taken. */
export async function addField(ctx: AppContext, name: string, input: unknown): Promise<CollectionJson> {
  const def = parseFieldDecl(input, "the field");
  return await changeFields(ctx, name, (col) => addFieldsIn(ctx, col, [def]));
}

/**
 * `PATCH /admin/collections/:name/fields/:field { name?, type? }`: renames and/or changes the type (every stored
 * value converts, or 409 `{ count }` and nothing changes).
 */
export async function changeField(ctx: AppContext, name: string, field: string, input: unknown): Promise<CollectionJson> {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object { name?, type? }");
  const body = input as Record<string, unknown>;
  const extra = Object.keys(body).find((k) => k !== "name" && k !== "type");
  if (extra !== undefined) throw badRequest(`unknown key "${extra.slice(0, 40)}": expected name or type`);
  if (body.name === undefined && body.type === undefined) throw badRequest("give name, type or both");
  if (body.name !== undefined && (typeof body.name !== "string" || !isValidFieldName(body.name)))
    throw badRequest(`invalid field name "${String(body.name).slice(0, 80)}": use a letter then letters, digits or _ (at most 64)`);
  const type = body.type === undefined ? undefined : parseFieldType(body.type, "the field");
  const to = body.name as string | undefined;
  return await changeFields(ctx, name, async (col) => {
    let def = requireField(col, field);
    if (to !== undefined && to !== def.name) {
      await renameFieldIn(ctx, col, def, to);
      col = await requireCollection(ctx, col.name);
      def = requireField(col, to);
    }
    if (type !== undefined && type !== def.type) await retypeFieldIn(ctx, col, def, type);
  });
}

/** `DELETE /admin/collections/:name/fields/:field`: drops the column and its data; 409 while an index, relation or rule names it. */
export async function dropField(ctx: AppContext, name: string, field: string): Promise<CollectionJson> {
  return await changeFields(ctx, name, (col) => dropFieldIn(ctx, col, requireField(col, field)));
}

/** The virtual field (`many`, `many_via`) of a relation from `col` under that name, if any. */
function virtualField(rels: readonly Relation[], col: Collection, name: string): Relation | undefined {
  return rels.find((r) => r.type !== "one" && same(r.from_col, col.name) && same(r.from_field, name));
}

/** The relations whose stored field is `col.field`: a `one` relation's id field, a `many` relation's `to_field`. */
function relationsNaming(rels: readonly Relation[], col: Collection, field: string): Relation[] {
  return rels.filter(
    (r) => (r.type === "one" && same(r.from_col, col.name) && same(r.from_field, field)) || (r.type === "many" && same(r.to_col, col.name) && same(r.to_field ?? "", field)),
  );
}

const describeRelation = (r: Relation) => `the ${r.type} relation ${r.from_col}.${r.from_field} → ${r.to_col}${r.to_field ? `.${r.to_field}` : ""}`;

/** 409 while an access rule names the field (CONTRACT §12): it must change first. */
async function refuseIfRulesName(ctx: AppContext, col: Collection, field: FieldDef, what: string): Promise<void> {
  const refs = await rulesNaming(ctx, col.name, field.name);
  if (refs.length) throw conflict(`field "${field.name}" of "${col.name}" cannot be ${what}: ${describeRules(refs)} names it; change the rule first`);
}

/** Adds declared fields to `col` inside the caller's transaction (their columns, the full-text index's text fields, the row). */
export async function addFieldsIn(ctx: AppContext, col: Collection, defs: readonly FieldDef[]): Promise<void> {
  if (!defs.length) return;
  const rels = (await currentCatalog(ctx)).relations;
  for (const d of defs) {
    const taken = col.fieldMap.get(lower(d.name));
    if (taken) throw conflict(`collection "${col.name}" already has a field "${taken.name}"`);
    const rel = virtualField(rels, col, d.name);
    if (rel) throw conflict(`"${d.name}" is the field of ${describeRelation(rel)}`);
  }
  if (col.fields.length + defs.length > MAX_FIELDS) throw badRequest(`a collection has at most ${MAX_FIELDS} fields`);
  for (const d of defs) await addColumn(ctx.db, col.name, d.name, d.type);
  const fields = [...col.fields, ...defs];
  const fts = await ftsAfterNewFields(ctx, col, fields);
  await saveCollectionRow(ctx, { ...col, fields, fts, updatedAt: ctx.clock.now() }, { fields: "add" });
}

/** The text fields of a list, which the full-text index covers. */

/** Renames `def` of `col` to `to` inside the caller's transaction; field rules, indexes, full text and relations follow. */
export async function renameFieldIn(ctx: AppContext, col: Collection, def: FieldDef, to: string): Promise<void> {
  if (!isValidFieldName(to)) throw badRequest(`invalid field name "${to.slice(0, 80)}": use a letter then letters, digits or _ (at most 64)`);
  if (to === def.name) return;
  const taken = col.fieldMap.get(lower(to));
  if (taken && taken !== def) throw conflict(`collection "${col.name}" already has a field "${taken.name}"`);
  const rels = (await currentCatalog(ctx)).relations;
  const rel = virtualField(rels, col, to);
  if (rel) throw conflict(`"${to}" is the field of ${describeRelation(rel)}`);
  await refuseIfRulesName(ctx, col, def, "renamed");
  const from = def.name;
  const rename = (f: string) => (f === from ? to : f);
  const renamed: FieldDef = { ...def, name: to, was: [...(def.was ?? []).filter((w) => !same(w, to)), from].slice(-MAX_WAS) };
  const fields = col.fields.map((f) => (f === def ? renamed : f));
  await renameColumn(ctx.db, col.name, from, to);
  let fts = col.fts;
  if (fts.enabled && def.type === "text") {
    fts = { ...fts, fields: fts.fields.map(rename) };
    await execAll(ctx.db, ctx.db.sql.fts.renamed(col.name, fts.fields));
  }
  const named = relationsNaming(rels, col, from);
  if (named.length) {
    noteCatalogChange(ctx);
    for (const r of named) {
      if (r.type === "one") await ctx.db.run("UPDATE _relations SET from_field = ? WHERE id = ?", [to, r.id]);
      else await ctx.db.run("UPDATE _relations SET to_field = ? WHERE id = ?", [to, r.id]);
    }
  }
  await saveCollectionRow(
    ctx,
    {
      ...col,
      fields,
      fieldRules: col.fieldRules.map((r) => (r.field === from ? { ...r, field: to } : r)),
      indexes: col.indexes.map((i) => (i.fields.includes(from) ? { ...i, fields: i.fields.map(rename) } : i)),
      fts,
      updatedAt: ctx.clock.now(),
    },
    { fields: "replace" },
  );
}

/** Calls `fn` with the non-null stored values of `field`, CONVERT_CHUNK rows at a time in `_id` order. */
async function forEachValuePage(ctx: AppContext, table: string, field: string, fn: (rows: { id: string; v: unknown }[]) => Promise<void> | void): Promise<void> {
  let after = "";
  for (;;) {
    const rows = await readColumnPage(ctx.db, table, field, after, CONVERT_CHUNK);
    if (!rows.length) return;
    await fn(rows);
    if (rows.length < CONVERT_CHUNK) return;
    after = rows[rows.length - 1]!.id;
    await yieldTurn();
  }
}

/** How many stored values of `def` have no value of type `to` (CONTRACT §13's conversions). */
export async function unconvertibleCount(ctx: AppContext, col: Collection, def: FieldDef, to: FieldType): Promise<number> {
  let n = 0;
  await forEachValuePage(ctx, col.name, def.name, (rows) => {
    for (const r of rows) if (!convertValue(def.type, to, storedToValue(def.type, r.v)).ok) n++;
  });
  return n;
}

/**
 * Changes the type of `def` to `to` inside the caller's transaction: counts first the values that would not
 * convert (409 `{ count }` when any), then puts the converted values in the field's place (in a new column that
 * takes its name, or in place where the engine's cast is checked to give the same values: see DdlDialect.fill);
 * indexes on it are made again, the full-text index too when text is involved.
 */
export async function retypeFieldIn(ctx: AppContext, col: Collection, def: FieldDef, to: FieldType): Promise<void> {
  if (to === def.type) return;
  // A file field's values name stored files: no other type's values do, and text never becomes a file.
  if (to === "file" || def.type === "file")
    throw conflict(`field "${def.name}" of "${col.name}" cannot change type ${def.type === "file" ? "from" : "to"} file: add a new field instead`);
  const rels = relationsNaming((await currentCatalog(ctx)).relations, col, def.name);
  if (rels.length) throw conflict(`field "${def.name}" of "${col.name}" holds the ids of ${describeRelation(rels[0]!)}: its type cannot change`);
  await checkRulesRetyped(ctx, col, def, to);
  const count = await unconvertibleCount(ctx, col, def, to);
  if (count > 0)
    throw new AppError(409, "conflict", `${count} ${fieldWord(count)} of "${def.name}" cannot be converted from ${def.type} to ${to}; nothing was changed`, { count });
  const db = ctx.db;
  const fields = col.fields.map((f) => (f === def ? { ...f, type: to } : f));
  // What names the column on SQLite must go before it can be dropped: its indexes and full-text triggers.
  const rebuildFts = col.fts.enabled && (def.type === "text" || to === "text");
  if (rebuildFts) await dropFtsObjects(db, col.name);
  const indexes = col.indexes.filter((i) => i.fields.includes(def.name));
  for (const i of indexes) await dropIndex(db, i.name);
  const fill = columnFill(db, col.name, def.name, def.type, RETYPE_COLUMN, to);
  await fill.begin();
  await forEachValuePage(ctx, col.name, def.name, async (rows) => {
    const pairs: [string, unknown][] = [];
    for (const r of rows) {
      const c = convertValue(def.type, to, storedToValue(def.type, r.v));
      // Counted above under the same lock: every value converts.
      if (!c.ok) throw new Error(`value of "${def.name}" changed during its conversion`);
      if (c.value !== null) pairs.push([r.id, valueToFill(to, c.value)]);
    }
    await fill.chunk(pairs);
  });
  await fill.finish();
  for (const i of indexes) await recreateIndex(ctx, col.name, i);
  const fts = rebuildFts ? await fillFts(ctx, col.name, await indexedFields(ctx, col.name, fields)) : col.fts;
  await saveCollectionRow(ctx, { ...col, fields, fts, updatedAt: ctx.clock.now() }, { fields: "replace" });
}

/**
 * Gives the file field `def` of `col` the options `options` (`max_size`, `mime`, `max_count`: checked by the
 * caller, parseFieldDecl), which hold for the uploads after it; the files stored stay. A field holding one name
 * cannot become one holding a list or back (`max_count` across 1): 409, as its values would change shape.
 */
export async function setFileOptionsIn(ctx: AppContext, col: Collection, def: FieldDef, options: Record<string, unknown>): Promise<void> {
  const was = Number(def.options?.max_count ?? 1);
  const to = Number(options.max_count ?? 1);
  if (was !== to && (was === 1 || to === 1))
    throw conflict(`file field "${def.name}" of "${col.name}" holds ${was === 1 ? "one name" : "a list of names"}: max_count cannot go from ${was} to ${to} (add a new field instead)`);
  const fields = col.fields.map((f) => (f === def ? { ...f, options } : f));
  await saveCollectionRow(ctx, { ...col, fields, updatedAt: ctx.clock.now() }, { fields: "replace" });
}

/**
 * 409 when an access rule naming the field would no longer check with the field's new type (`year > 1900` once
 * `year` is text): from then on it would deny everyone but admins, unseen. The rule changes first, as for a rename.
 */
async function checkRulesRetyped(ctx: AppContext, col: Collection, def: FieldDef, to: FieldType): Promise<void> {
  const refs = await rulesNaming(ctx, col.name, def.name);
  if (!refs.length) return;
  const fields = col.fields.map((f) => (f === def ? { ...f, type: to } : f));
  const retyped: Collection = { ...col, fields, fieldMap: new Map(fields.map((f) => [f.name.toLowerCase(), f])) };
  refuseIfRulesBreak(withCollection(await ruleCatalog(ctx), retyped), `field "${def.name}" of "${col.name}" cannot become ${to}`, refs);
}

/** Makes an index again after its column was replaced; values that the conversion made equal break a unique one: 409. */
async function recreateIndex(ctx: AppContext, table: string, i: IndexDef): Promise<void> {
  try {
    await createIndex(ctx.db, table, i.name, i.fields, i.unique);
  } catch (err) {
    if (err instanceof AppError && err.code === "unique_violation")
      throw new AppError(409, "unique_violation", `converted values are no longer unique in (${i.fields.join(", ")}) (index "${i.name}"); nothing was changed`, {
        fields: i.fields,
      });
    throw err;
  }
}

/** Makes the full-text index of `table` (again) over `fields` and fills it from every row, inside the caller's transaction. */
export async function fillFts(ctx: AppContext, table: string, fields: string[]): Promise<{ enabled: true; fields: string[] }> {
  const db = ctx.db;
  await execAll(db, db.sql.fts.create(table, fields));
  const steps = db.sql.fts.steps;
  if (steps) {
    const { last } = (await db.get<{ last: number | null }>(steps.extent(table)))!;
    if (last !== null) await db.run(steps.fill(table, fields), [0, last]);
  }
  return { enabled: true, fields };
}

/**
 * Drops `def` of `col` inside the caller's transaction: its column and data, and the field rules that name it.
 * 409 while an index, a relation or an access rule names it.
 */
export async function dropFieldIn(ctx: AppContext, col: Collection, def: FieldDef): Promise<void> {
  const index = col.indexes.find((i) => i.fields.includes(def.name));
  if (index) throw conflict(`field "${def.name}" of "${col.name}" is in the index "${index.name}"; drop the index first`);
  const rels = relationsNaming((await currentCatalog(ctx)).relations, col, def.name);
  if (rels.length) throw conflict(`field "${def.name}" of "${col.name}" is the field of ${describeRelation(rels[0]!)}; delete the relation first`);
  await refuseIfRulesName(ctx, col, def, "dropped");
  const fields = col.fields.filter((f) => f !== def);
  const rebuildFts = col.fts.enabled && def.type === "text";
  if (rebuildFts) await dropFtsObjects(ctx.db, col.name);
  await dropColumn(ctx.db, col.name, def.name);
  const fts = rebuildFts ? await fillFts(ctx, col.name, await indexedFields(ctx, col.name, fields)) : col.fts;
  await saveCollectionRow(
    ctx,
    { ...col, fields, fieldRules: col.fieldRules.filter((r) => r.field !== def.name), fts, updatedAt: ctx.clock.now() },
    { fields: "replace" },
  );
}
