import type { AppContext } from "../context.ts";
import { AppError, badRequest, conflict } from "../errors.ts";
import { createRelation, deleteRelation } from "./relations.ts";
import { mergeRules } from "../rules/validate.ts";
import { isExpressionRule } from "../rules/expr/rule.ts";
import { disableFts, indexedFields, indexedFieldsAmong } from "../search/fts.ts";
import { inTransaction } from "../transaction.ts";
import { createCollection, deleteCollection, updateCollectionRules, type CollectionJson } from "./admin.ts";
import { collectionToJson, currentCatalog, listCollections, noteCatalogChange, requireCollection, saveCollectionRow, touchCatalog } from "../catalog/catalog.ts";
import { beginColumnChange } from "./ddl.ts";
import { addFieldsIn, dropFieldIn, fillFts, renameFieldIn, requireField, retypeFieldIn, setFileOptionsIn } from "./fields.ts";
import { parseFieldDecl, sameDeclaration } from "../catalog/field-types.ts";
import { createIndexDef, dropIndexDef } from "./indexes.ts";
import { DEFAULT_RULES, MAX_FIELDS, OPERATIONS, SYSTEM_FIELDS, isValidCollectionName, isValidFieldName, type Collection, type FieldDef, type FieldRule, type IndexDef, type Rules, ON_DELETE, RELATION_TYPES, type OnDelete, type Relation, type RelationType } from "../catalog/types.ts";
import { parseFieldRules } from "./validate.ts";

// The schema as one document (CONTRACT §13): `GET /admin/schema` exports the collections and relations;
// `POST /admin/schema/apply` makes the database match a document: what is missing is created, what differs is
// changed (a field with `renamed_from` is renamed), and what the document lacks is dropped only with `prune`.
// The plan is worked out inside the transaction that carries it out, so it is the plan of the database as it is
// then; every change runs in that one transaction (all or nothing), and a dry run rolls it back at the end.

/** One change of a plan: `create_collection`, `add_field`, `rename_field`, … on `target`, said in `detail`. */
export interface Change {
  action: string;
  target: string;
  detail: string;
}

export interface SchemaJson {
  collections: CollectionJson[];
  relations: Relation[];
}

/** `GET /admin/schema`: every collection object and every relation. */
export async function exportSchema(ctx: AppContext): Promise<SchemaJson> {
  const collections = (await listCollections(ctx)).map(collectionToJson);
  return { collections, relations: [...(await currentCatalog(ctx)).relations] };
}

// ---- The document, as read

interface WantedField {
  def: FieldDef;
  renamedFrom?: string;
}

interface WantedIndex {
  name?: string;
  fields: string[];
  unique: boolean;
}

interface WantedCollection {
  name: string;
  /** Each is undefined when the document leaves it out: then it is left as it is. */
  rules?: unknown;
  fieldRules?: FieldRule[];
  fields?: WantedField[];
  indexes?: WantedIndex[];
  fts?: boolean;
}

interface WantedRelation {
  from_col: string;
  from_field: string;
  to_col: string;
  to_field: string | null;
  type: RelationType;
  on_delete: OnDelete;
}

interface Wanted {
  collections: WantedCollection[];
  relations?: WantedRelation[];
}

const lower = (s: string) => s.toLowerCase();
const same = (a: string, b: string) => lower(a) === lower(b);
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[], where: string): void {
  const extra = Object.keys(o).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw badRequest(`${where}: unknown key "${extra.slice(0, 40)}"`);
}

// The keys of a collection object and of a relation (as exported) that apply reads or ignores.
const COLLECTION_KEYS = ["name", "rules", "field_rules", "fields", "indexes", "fts", "created_at", "updated_at"];
const RELATION_KEYS = ["id", "from_col", "from_field", "to_col", "to_field", "type", "on_delete", "created_at"];

function readIndex(raw: unknown, where: string): WantedIndex {
  if (!isObject(raw)) throw badRequest(`${where} must be an object { fields, unique?, name? }`);
  onlyKeys(raw, ["name", "fields", "unique"], where);
  if (raw.name !== undefined && (typeof raw.name !== "string" || !/^[A-Za-z][A-Za-z0-9_]{0,119}$/.test(raw.name))) throw badRequest(`${where}: "name" must be a valid identifier`);
  if (!Array.isArray(raw.fields) || !raw.fields.length || raw.fields.some((f) => typeof f !== "string")) throw badRequest(`${where}: "fields" must be a non-empty array of field names`);
  if (raw.unique !== undefined && typeof raw.unique !== "boolean") throw badRequest(`${where}: "unique" must be a boolean`);
  return { name: raw.name as string | undefined, fields: raw.fields as string[], unique: raw.unique === true };
}

function readCollection(raw: unknown, where: string): WantedCollection {
  if (!isObject(raw)) throw badRequest(`${where} must be a collection object`);
  onlyKeys(raw, COLLECTION_KEYS, where);
  const name = raw.name;
  if (!isValidCollectionName(name)) throw badRequest(`${where}: invalid collection name ${JSON.stringify(name)?.slice(0, 80)}`);
  const out: WantedCollection = { name };
  if (raw.rules !== undefined) {
    mergeRules(DEFAULT_RULES, raw.rules);
    out.rules = raw.rules;
  }
  if (raw.field_rules !== undefined) out.fieldRules = parseFieldRules(raw.field_rules);
  if (raw.fields !== undefined) {
    if (!Array.isArray(raw.fields)) throw badRequest(`${where}.fields must be an array`);
    if (raw.fields.length > MAX_FIELDS) throw badRequest(`${where}: a collection has at most ${MAX_FIELDS} fields`);
    const fields = raw.fields.map((f, i): WantedField => {
      const at = `${where}.fields[${i}]`;
      const def = parseFieldDecl(f, at, ["renamed_from"]);
      const from = (f as Record<string, unknown>).renamed_from;
      if (from === undefined || from === null) return { def };
      if (typeof from !== "string" || !isValidFieldName(from)) throw badRequest(`${at}: "renamed_from" must be a field name`);
      return { def, renamedFrom: from };
    });
    const seen = new Set<string>();
    for (const f of fields) {
      if (seen.has(lower(f.def.name))) throw badRequest(`${where}: the field "${f.def.name}" is declared twice`);
      seen.add(lower(f.def.name));
    }
    const sources = fields.filter((f) => f.renamedFrom).map((f) => lower(f.renamedFrom!));
    if (new Set(sources).size !== sources.length) throw badRequest(`${where}: two fields are renamed from the same field`);
    out.fields = fields;
  }
  if (raw.indexes !== undefined) {
    if (!Array.isArray(raw.indexes)) throw badRequest(`${where}.indexes must be an array`);
    out.indexes = raw.indexes.map((x, i) => readIndex(x, `${where}.indexes[${i}]`));
    const names = out.indexes.filter((x) => x.name !== undefined).map((x) => lower(x.name!));
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice !== undefined) throw badRequest(`${where}: the index name "${twice}" is given twice`);
  }
  if (raw.fts !== undefined) {
    const fts = raw.fts;
    if (typeof fts === "boolean") out.fts = fts;
    else if (isObject(fts) && typeof fts.enabled === "boolean") out.fts = fts.enabled;
    else throw badRequest(`${where}.fts must be { "enabled": true|false }`);
  }
  return out;
}

function readRelation(raw: unknown, where: string): WantedRelation {
  if (!isObject(raw)) throw badRequest(`${where} must be a relation object`);
  onlyKeys(raw, RELATION_KEYS, where);
  for (const k of ["from_col", "from_field", "to_col"] as const)
    if (typeof raw[k] !== "string" || !raw[k]) throw badRequest(`${where}: "${k}" is required`);
  if (!RELATION_TYPES.includes(raw.type as RelationType)) throw badRequest(`${where}: "type" must be one of: ${RELATION_TYPES.join(", ")}`);
  const onDelete = raw.on_delete === undefined || raw.on_delete === null || raw.on_delete === "" ? "restrict" : raw.on_delete;
  if (!ON_DELETE.includes(onDelete as OnDelete)) throw badRequest(`${where}: "on_delete" must be one of: ${ON_DELETE.join(", ")}`);
  const toField = raw.to_field === undefined || raw.to_field === "" ? null : raw.to_field;
  if (toField !== null && typeof toField !== "string") throw badRequest(`${where}: "to_field" must be a field name`);
  return {
    from_col: raw.from_col as string,
    from_field: raw.from_field as string,
    to_col: raw.to_col as string,
    to_field: toField,
    type: raw.type as RelationType,
    on_delete: onDelete as OnDelete,
  };
}

/** Reads a schema document (as `GET /admin/schema` gives it); 400 naming the first mistake. */
export function readSchema(raw: unknown): Wanted {
  if (raw === undefined) throw badRequest("schema is required");
  if (!isObject(raw)) throw badRequest('schema must be an object { "collections": [...], "relations": [...] }');
  onlyKeys(raw, ["collections", "relations"], "schema");
  if (!Array.isArray(raw.collections)) throw badRequest("schema.collections must be an array");
  const collections = raw.collections.map((c, i) => readCollection(c, `schema.collections[${i}]`));
  const names = new Set<string>();
  for (const c of collections) {
    if (names.has(lower(c.name))) throw badRequest(`schema.collections: "${c.name}" is given twice`);
    names.add(lower(c.name));
  }
  const out: Wanted = { collections };
  if (raw.relations !== undefined) {
    if (!Array.isArray(raw.relations)) throw badRequest("schema.relations must be an array");
    out.relations = raw.relations.map((r, i) => readRelation(r, `schema.relations[${i}]`));
    const keys = new Set<string>();
    for (const r of out.relations) {
      const key = `${lower(r.from_col)}.${lower(r.from_field)}`;
      if (keys.has(key)) throw badRequest(`schema.relations: ${r.from_col}.${r.from_field} is given twice`);
      keys.add(key);
    }
  }
  return out;
}

// ---- The plan

/**
 * A planned change and how to make it (inside the apply's transaction): `prepare` of every step first, then `run`
 * of every step in plan order, then `finish` of every step.
 */
interface Step extends Change {
  prepare?(): Promise<void>;
  run(): Promise<void>;
  finish?(): Promise<void>;
}

/**
 * Rules as given with each expression held back as `disabled`, or null when none is an expression. An expression is
 * checked against the catalog when set, so the document's expressions are set once its collections, fields and
 * relations all exist (a rule may name a collection made after its own, or a relation added last), and the stored
 * expressions a change replaces are held back first (one naming a field renamed or dropped would refuse that change).
 * All in the apply's one transaction: nothing outside it sees the held-back rules.
 */
function heldBack(rules: unknown, ops?: readonly string[]): Record<string, unknown> | null {
  if (!rules || typeof rules !== "object" || Array.isArray(rules)) return null;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [op, rule] of Object.entries(rules)) {
    if (ops && !ops.includes(op)) continue;
    const expression = typeof rule === "string" && isExpressionRule(rule);
    any ||= expression;
    out[op] = expression ? "disabled" : rule;
  }
  return any ? out : null;
}

const ruleText = (r: unknown) => (typeof r === "string" ? r : JSON.stringify(r));
const indexText = (fields: readonly string[], unique: boolean) => `(${fields.join(", ")})${unique ? " unique" : ""}`;
const relationText = (r: { type: string; to_col: string; to_field: string | null; on_delete: string }) =>
  `${r.type} → ${r.to_col}${r.type === "many" && r.to_field ? `.${r.to_field}` : ""} (on_delete ${r.on_delete})`;

/** Whether two relations (one stored, one wanted) are the same but for on_delete. */
function sameRelationShape(have: Relation, want: WantedRelation): boolean {
  if (have.type !== want.type || !same(have.to_col, want.to_col)) return false;
  // A many relation's to_field given as null is the field of the one relation back (createRelation finds it).
  if (want.type === "many" && want.to_field !== null) return same(have.to_field ?? "", want.to_field);
  return true;
}

/** The steps of a plan by the phase they run in (planSteps puts the phases in order). */
interface Plan {
  creates: Step[];
  fieldSteps: Step[];
  ruleSteps: Step[];
  fieldRuleSteps: Step[];
  dropRelations: Step[];
  dropIndexes: Step[];
  dropFields: Step[];
  dropCollections: Step[];
  addRelations: Step[];
  addIndexes: Step[];
  ftsSteps: Step[];
  /** Field renames of this plan by collection: old name (lower case) → new name; relations and indexes follow them. */
  renames: Map<string, Map<string, string>>;
}

/** A field's name after the plan's renames. */
const renamedIn = (plan: Plan, col: string, field: string) => plan.renames.get(lower(col))?.get(lower(field)) ?? field;

/**
 * Works out the changes that make the database (`cols`, `rels`: as this transaction reads them) match `want`,
 * in the order they run: new collections; field renames, additions and type changes; rules and field rules;
 * then what goes (relations, indexes, fields, collections: with `prune`, or to be made again); then new
 * relations, indexes and full-text indexes.
 */
function planSteps(ctx: AppContext, cols: readonly Collection[], rels: readonly Relation[], want: Wanted, prune: boolean): Step[] {
  const byName = new Map(cols.map((c) => [lower(c.name), c]));
  const wanted = new Map(want.collections.map((c) => [lower(c.name), c]));
  const plan: Plan = {
    creates: [],
    fieldSteps: [],
    ruleSteps: [],
    fieldRuleSteps: [],
    dropRelations: [],
    dropIndexes: [],
    dropFields: [],
    dropCollections: [],
    addRelations: [],
    addIndexes: [],
    ftsSteps: [],
    renames: new Map(),
  };
  for (const w of want.collections) {
    const have = byName.get(lower(w.name));
    if (!have) {
      planNewCollection(ctx, plan, w, relationsAfter(rels, want, prune));
      continue;
    }
    const map = new Map<string, string>();
    plan.renames.set(lower(have.name), map);
    // With prune, fields and indexes the document leaves out are fields and indexes it lacks.
    const wantedFields = w.fields ?? (prune ? [] : undefined);
    const wantedIndexes = w.indexes ?? (prune ? [] : undefined);
    if (wantedFields) planFields(ctx, plan, have, wantedFields, prune, map, relationsAfter(rels, want, prune));
    planRules(ctx, plan, have, w, map);
    if (wantedIndexes) planIndexes(ctx, plan, have, w, wantedIndexes, prune);
    if (w.fts !== undefined && w.fts !== have.fts.enabled)
      plan.ftsSteps.push(ftsStep(ctx, have.name, w.fts, indexedFieldsAmong(have.name, w.fields ? w.fields.map((f) => f.def) : have.fields, relationsAfter(rels, want, prune))));
  }
  if (prune)
    for (const c of cols) {
      if (wanted.has(lower(c.name))) continue;
      // Its expressions held back first: what they name (its relations, fields or collections the document also
      // drops) may go before it does.
      const stored = heldBack(c.rules);
      plan.dropCollections.push({
        action: "drop_collection",
        target: c.name,
        detail: "its table and every record in it are dropped",
        ...(stored ? { prepare: async () => void (await updateCollectionRules(ctx, c.name, { rules: stored })) } : {}),
        run: async () => void (await deleteCollection(ctx, c.name)),
      });
    }
  // With prune, a document without relations lacks every relation.
  const wantedRelations = want.relations ?? (prune ? [] : undefined);
  if (wantedRelations) planRelations(ctx, plan, { byName, wanted, rels }, wantedRelations, prune);
  // Field rules after the fields dropped (a drop takes the rules naming the field with it), access rules before
  // (an access rule naming a field blocks its drop until the rule changes).
  const p = plan;
  return [...p.creates, ...p.fieldSteps, ...p.ruleSteps, ...p.dropRelations, ...p.dropIndexes, ...p.dropFields, ...p.fieldRuleSteps, ...p.dropCollections, ...p.addRelations, ...p.addIndexes, ...p.ftsSteps];
}

/** A collection the document has and the database lacks: made with its fields, then its indexes and full-text index. */
function planNewCollection(ctx: AppContext, plan: Plan, w: WantedCollection, relations: (Relation | WantedRelation)[]): void {
  const fields = (w.fields ?? []).map((f) => f.def);
  const held = heldBack(w.rules);
  plan.creates.push({
    action: "create_collection",
    target: w.name,
    detail: fields.length ? `fields: ${fields.map((f) => `${f.name} (${f.type})`).join(", ")}` : "no fields",
    run: async () => {
      await createCollection(ctx, { name: w.name, rules: held ?? w.rules, field_rules: w.fieldRules, fields: fields.map((f) => ({ name: f.name, type: f.type, ...f.options })) });
    },
    ...(held ? { finish: async () => void (await updateCollectionRules(ctx, w.name, { rules: w.rules })) } : {}),
  });
  for (const i of w.indexes ?? []) plan.addIndexes.push(indexStep(ctx, w.name, i));
  if (w.fts) plan.ftsSteps.push(ftsStep(ctx, w.name, true, indexedFieldsAmong(w.name, fields, relations)));
}

/** The relations there will be once the document is applied: its own where it lists them (with those it keeps unless pruned). */
function relationsAfter(rels: readonly Relation[], want: Wanted, prune: boolean): (Relation | WantedRelation)[] {
  if (!want.relations) return prune ? [] : [...rels];
  return prune ? want.relations : [...rels, ...want.relations];
}

/** The renames, type changes and additions that give `have` the wanted fields; with prune, the drops of the others. */
function planFields(
  ctx: AppContext,
  plan: Plan,
  have: Collection,
  wantedFields: WantedField[],
  prune: boolean,
  map: Map<string, string>,
  kept: readonly (Relation | WantedRelation)[],
): void {
  const name = have.name;
  const claimed = new Set<FieldDef>();
  const wantedNames = new Set(wantedFields.map((f) => lower(f.def.name)));
  const adds: FieldDef[] = [];
  for (const f of wantedFields) {
    let cur = have.fieldMap.get(lower(f.def.name));
    if (!cur && f.renamedFrom && !wantedNames.has(lower(f.renamedFrom))) {
      const from = have.fieldMap.get(lower(f.renamedFrom));
      if (from) {
        cur = from;
        map.set(lower(from.name), f.def.name);
      }
    } else if (cur && cur.name !== f.def.name) map.set(lower(cur.name), f.def.name);
    if (!cur) {
      adds.push(f.def);
      continue;
    }
    claimed.add(cur);
    const source = cur;
    const to = f.def.name;
    if (source.name !== to)
      plan.fieldSteps.push({
        action: "rename_field",
        target: `${name}.${to}`,
        detail: `renamed from ${source.name}`,
        run: async () => {
          const col = await requireCollection(ctx, name);
          await renameFieldIn(ctx, col, requireField(col, source.name), to);
        },
      });
    if (source.type !== f.def.type)
      plan.fieldSteps.push({
        action: "retype_field",
        target: `${name}.${to}`,
        detail: `${source.type} → ${f.def.type}`,
        run: async () => {
          const col = await requireCollection(ctx, name);
          await retypeFieldIn(ctx, col, requireField(col, to), f.def.type);
        },
      });
    else if (!sameDeclaration(source, f.def))
      plan.fieldSteps.push({
        action: "update_field",
        target: `${name}.${to}`,
        detail: `options ${JSON.stringify(source.options ?? {})} → ${JSON.stringify(f.def.options ?? {})}`,
        run: async () => {
          const col = await requireCollection(ctx, name);
          await setFileOptionsIn(ctx, col, requireField(col, to), f.def.options ?? {});
        },
      });
  }
  for (const d of adds)
    plan.fieldSteps.push({
      action: "add_field",
      target: `${name}.${d.name}`,
      detail: d.type,
      run: async () => addFieldsIn(ctx, await requireCollection(ctx, name), [d]),
    });
  if (prune)
    for (const f of have.fields) {
      // The field of a `one` relation the document keeps is wanted, listed or not.
      if (claimed.has(f) || kept.some((r) => r.type === "one" && lower(r.from_col) === lower(name) && lower(r.from_field) === lower(f.name))) continue;
      plan.dropFields.push({
        action: "drop_field",
        target: `${name}.${f.name}`,
        detail: `${f.type}: its column and every value in it are dropped`,
        run: async () => {
          const col = await requireCollection(ctx, name);
          await dropFieldIn(ctx, col, requireField(col, f.name));
        },
      });
    }
}

/** The changes of access rules and field rules the document asks for (field rules compared after the renames). */
function planRules(ctx: AppContext, plan: Plan, have: Collection, w: WantedCollection, map: Map<string, string>): void {
  const name = have.name;
  const renamed = (col: string, field: string) => renamedIn(plan, col, field);
  if (w.rules !== undefined) {
    const rules = mergeRules(have.rules, w.rules);
    const diff = OPERATIONS.filter((op) => JSON.stringify(rules[op]) !== JSON.stringify(have.rules[op]));
    if (diff.length) {
      const set = async () => void (await updateCollectionRules(ctx, name, { rules: w.rules }));
      const stored = heldBack(have.rules, diff);
      plan.ruleSteps.push({
        action: "set_rules",
        target: name,
        detail: diff.map((op) => `${op}: ${ruleText(have.rules[op])} → ${ruleText(rules[op])}`).join("; "),
        ...(stored ? { prepare: async () => void (await updateCollectionRules(ctx, name, { rules: stored })) } : {}),
        // Expressions once everything they may name exists; fixed words at once.
        ...(heldBack(w.rules) ? { run: async () => {}, finish: set } : { run: set }),
      });
    }
  }
  if (w.fieldRules !== undefined) {
    const target = w.fieldRules;
    // The stored rules as the renames above leave them (renameFieldIn renames a rule's field with it).
    const after = have.fieldRules.map((r) => (map.has(lower(r.field)) && have.fieldMap.get(lower(r.field))?.name === r.field ? { ...r, field: renamed(name, r.field) } : r));
    if (JSON.stringify(target) !== JSON.stringify(after))
      plan.fieldRuleSteps.push({
        action: "set_field_rules",
        target: name,
        detail: `${target.length} field rule${target.length === 1 ? "" : "s"} (was ${have.fieldRules.length})`,
        run: async () => void (await updateCollectionRules(ctx, name, { field_rules: target })),
      });
  }
}

/** The indexes to make (or make again with other fields) so `have` has the wanted ones; with prune, the drops of the others. */
function planIndexes(ctx: AppContext, plan: Plan, have: Collection, w: WantedCollection, wantedIndexes: WantedIndex[], prune: boolean): void {
  const name = have.name;
  const renamed = (col: string, field: string) => renamedIn(plan, col, field);
  // Index fields compared by the names they will have: a stored index's after the renames above, a wanted
  // one's as the document declares the fields (letter case aside).
  const system = (f: string) => SYSTEM_FIELDS.find((s) => s === lower(f));
  const spellWanted = (f: string) => system(f) ?? w.fields?.find((x) => same(x.def.name, f))?.def.name ?? have.fieldMap.get(lower(f))?.name ?? f;
  const spellStored = (f: string) => system(f) ?? renamed(name, f);
  const key = (fields: readonly string[], unique: boolean, spell: (f: string) => string) => `${fields.map((f) => lower(spell(f))).join("\0")}\0${unique}`;
  const storedKey = (x: IndexDef) => key(x.fields, x.unique, spellStored);
  const kept = new Set<IndexDef>();
  for (const i of wantedIndexes) {
    const wantedKey = key(i.fields, i.unique, spellWanted);
    const match = have.indexes.find((x) => !kept.has(x) && (i.name ? same(x.name, i.name) : storedKey(x) === wantedKey));
    if (match && storedKey(match) === wantedKey) {
      kept.add(match);
      continue;
    }
    if (match) {
      kept.add(match);
      plan.dropIndexes.push(dropIndexStep(ctx, name, match, "made again with other fields"));
    }
    plan.addIndexes.push(indexStep(ctx, name, { ...i, fields: i.fields.map(spellWanted) }));
  }
  if (prune) for (const x of have.indexes) if (!kept.has(x)) plan.dropIndexes.push(dropIndexStep(ctx, name, x, "not in the schema"));
}

/** The relations to make, change or make again so the database has the wanted ones; with prune, the drops of the others. */
function planRelations(
  ctx: AppContext,
  plan: Plan,
  db: { byName: Map<string, Collection>; wanted: Map<string, WantedCollection>; rels: readonly Relation[] },
  wantedRelations: WantedRelation[],
  prune: boolean,
): void {
  const { byName, wanted, rels } = db;
  const renamed = (col: string, field: string) => renamedIn(plan, col, field);
  const matched = new Set<Relation>();
  for (const r of wantedRelations) {
    if (!wanted.has(lower(r.from_col)) && !byName.has(lower(r.from_col))) throw badRequest(`schema.relations: ${r.from_col}.${r.from_field}: unknown collection "${r.from_col}"`);
    if (!wanted.has(lower(r.to_col)) && !byName.has(lower(r.to_col))) throw badRequest(`schema.relations: ${r.from_col}.${r.from_field}: unknown collection "${r.to_col}"`);
    const stored = rels.find((x) => same(x.from_col, r.from_col) && same(renamedRelationField(x, renamed), r.from_field));
    // As this plan's renames leave it (renameFieldIn renames a relation's fields with the field).
    const have = stored && { ...stored, to_field: stored.type === "many" && stored.to_field ? renamed(stored.to_col, stored.to_field) : stored.to_field };
    const target = `${r.from_col}.${r.from_field}`;
    if (stored && have) {
      matched.add(stored);
      if (sameRelationShape(have, r)) {
        if (have.on_delete !== r.on_delete)
          plan.addRelations.push({
            action: "update_relation",
            target,
            detail: `on_delete ${have.on_delete} → ${r.on_delete}`,
            run: () => setOnDelete(ctx, stored.id, r.on_delete),
          });
        continue;
      }
      // What differs is changed (CONTRACT §13), prune or not: the relation is made again as the document has it.
      plan.dropRelations.push(dropRelationStep(ctx, stored, "made again as the schema has it"));
    }
    plan.addRelations.push({
      action: "create_relation",
      target,
      detail: relationText(r),
      run: async () => void (await createRelation(ctx, r)),
    });
  }
  if (prune) for (const x of rels) if (!matched.has(x)) plan.dropRelations.push(dropRelationStep(ctx, x, "not in the schema"));
}

/** The field a relation names on its own collection after this plan's renames (a one relation's id field). */
function renamedRelationField(r: Relation, renamed: (col: string, field: string) => string): string {
  return r.type === "one" ? renamed(r.from_col, r.from_field) : r.from_field;
}

function indexStep(ctx: AppContext, collection: string, i: WantedIndex): Step {
  return {
    action: "create_index",
    target: i.name ? `${collection}.${i.name}` : `${collection}${indexText(i.fields, false)}`,
    detail: indexText(i.fields, i.unique),
    run: async () => void (await createIndexDef(ctx, collection, { fields: i.fields, unique: i.unique, ...(i.name ? { name: i.name } : {}) })),
  };
}

function dropIndexStep(ctx: AppContext, collection: string, i: IndexDef, why: string): Step {
  return {
    action: "drop_index",
    target: `${collection}.${i.name}`,
    detail: `${indexText(i.fields, i.unique)}: ${why}`,
    run: async () => void (await dropIndexDef(ctx, collection, i.name)),
  };
}

function dropRelationStep(ctx: AppContext, r: Relation, why: string): Step {
  return {
    action: "drop_relation",
    target: `${r.from_col}.${r.from_field}`,
    detail: `${relationText(r)}: ${why}${r.type === "many_via" ? " (its links are dropped)" : ""}`,
    run: async () => {
      // Gone already when its collection was dropped.
      if (((await currentCatalog(ctx)).relations).some((x) => x.id === r.id)) await deleteRelation(ctx, r.id);
    },
  };
}

/** Full text on or off; `textFields`: the fields the plan says it will take (the step reads them again when it runs). */
function ftsStep(ctx: AppContext, collection: string, enable: boolean, textFields: string[]): Step {
  return {
    action: enable ? "enable_fts" : "disable_fts",
    target: collection,
    detail: enable ? (textFields.length ? `over ${textFields.join(", ")}` : "over every text field") : "the full-text index is dropped",
    run: async () => {
      if (!enable) return void (await disableFts(ctx, collection));
      const col = await requireCollection(ctx, collection);
      const fts = await fillFts(ctx, col.name, await indexedFields(ctx, col.name, col.fields));
      await saveCollectionRow(ctx, { ...col, fts, updatedAt: ctx.clock.now() });
    },
  };
}

/** Changes what a relation does when its target is deleted. */
async function setOnDelete(ctx: AppContext, id: string, onDelete: OnDelete): Promise<void> {
  noteCatalogChange(ctx);
  await ctx.db.run("UPDATE _relations SET on_delete = ? WHERE id = ?", [onDelete, id]);
  await touchCatalog(ctx);
}

/** Thrown to roll a dry run back once every change was made. */
class DryRun extends Error {
  constructor(readonly changes: Change[]) {
    super("dry run");
  }
}

/** The collections whose columns a plan changes or drops: their locks are taken first (see DdlDialect.beginColumnChange). */
function tablesChanged(steps: readonly Step[], cols: readonly Collection[]): string[] {
  const touched = new Set<string>();
  for (const s of steps) {
    if (s.action.endsWith("_field") || s.action === "drop_collection") touched.add(lower(s.target.split(".")[0]!));
  }
  return cols.filter((c) => touched.has(lower(c.name))).map((c) => c.name);
}

/**
 * `POST /admin/schema/apply { schema, dry_run?, prune? }`: makes the database match the schema, all or nothing,
 * and answers the changes made (`applied: true`), or that would be made (`dry_run`: every change is made and
 * checked, then rolled back). A change that fails fails the whole apply with its error, naming the change.
 */
export async function applySchema(ctx: AppContext, input: { schema: unknown; dry_run?: unknown; prune?: unknown }): Promise<{ changes: Change[]; applied: boolean }> {
  const want = readSchema(input.schema);
  const prune = input.prune === true;
  const dryRun = input.dry_run === true;
  // A first plan, outside the transaction, names the tables whose locks the transaction takes first.
  const before = await listCollections(ctx);
  const lock = tablesChanged(planSteps(ctx, before, (await currentCatalog(ctx)).relations, want, prune), before);
  let changes: Change[];
  try {
    changes = await inTransaction(ctx, async () => {
      for (const t of lock) await beginColumnChange(ctx.db, t);
      const steps = planSteps(ctx, await listCollections(ctx), (await currentCatalog(ctx)).relations, want, prune);
      for (const phase of ["prepare", "run", "finish"] as const)
        for (const s of steps) {
          try {
            await s[phase]?.();
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            throw new AppError(err.status, err.code, `${s.action} ${s.target}: ${err.message}`, { ...err.extra, change: { action: s.action, target: s.target, detail: s.detail } }, err.headers);
          }
        }
      const done = steps.map(({ action, target, detail }) => ({ action, target, detail }));
      if (dryRun) throw new DryRun(done);
      return done;
    });
  } catch (err) {
    if (err instanceof DryRun) return { changes: err.changes, applied: false };
    throw err;
  }
  return { changes, applied: true };
}
