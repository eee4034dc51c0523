/**
 * The field types: the four of CONTRACT §2, and `file` (§14, declared only), stored as text: a file name, or
 * with `max_count` > 1 the JSON array of names.
 */
export type FieldType = "text" | "number" | "boolean" | "json" | "file";

/** The type a field's column stores: a file field's is text. */
export function storedType(t: FieldType): Exclude<FieldType, "file"> {
  return t === "file" ? "text" : t;
}

/** The options of a `file` field (CONTRACT §14), as its definition carries them. */
export interface FileOptions {
  max_size: number;
  mime: string[];
  max_count: number;
}

/** The options of a file field (null for any other). */
export function fileOptions(def: FieldDef): FileOptions | null {
  return def.type === "file" ? (def.options as unknown as FileOptions) : null;
}

export interface FieldDef {
  name: string;
  type: FieldType;
  /** The options its type takes (field-types.ts), when it has any. */
  options?: Record<string, unknown>;
  /** Its earlier names, latest last (a few): realtime filter topics set under an old name follow a rename. */
  was?: string[];
}

/** The rules of fixed meaning (CONTRACT §2.2). */
export type FixedRule = "public" | "authenticated" | "owner" | "disabled";
/**
 * A rule: a fixed word, a role, or an expression (CONTRACT §12): any other string, kept as given
 * (`string & {}` keeps the fixed words distinct for the type checker).
 */
export type RuleValue = FixedRule | { role: string } | (string & {});
export type Operation = "read" | "create" | "update" | "delete";
export type Rules = Record<Operation, RuleValue>;

export interface FieldRule {
  field: string;
  required?: boolean;
  min?: number;
  max?: number;
  regex?: string;
  enum?: unknown[];
}

export interface IndexDef {
  name: string;
  fields: string[];
  unique: boolean;
}

export interface FtsState {
  enabled: boolean;
  fields: string[];
  /** True from enabling until every row that existed then is indexed (kept in the row, so a restart resumes). */
  building?: boolean;
}

/** A collection as held in the in-memory catalog. */
export interface Collection {
  name: string;
  rules: Rules;
  fieldRules: FieldRule[];
  fields: FieldDef[];
  /** Lower-cased field name → definition (SQLite column names are case-insensitive). */
  fieldMap: Map<string, FieldDef>;
  indexes: IndexDef[];
  fts: FtsState;
  createdAt: number;
  updatedAt: number;
}

/** A record body's keys, in order, with the field each names under that exact spelling (undefined: none). */
export interface BodyShape {
  keys: string[];
  defs: (FieldDef | undefined)[];
  /** The names of the fields named (keys without a field left out), in order: the columns a row of this shape writes. */
  names: string[];
}

/** The last shape seen per collection (as loaded: a change of fields makes a new Collection object). */
const lastShapes = new WeakMap<Collection, BodyShape>();

/**
 * The fields a body's keys name, matched by their exact spelling (a key in another letter case, or
 * unknown, gets undefined). The records of a bulk insert mostly share their keys in one order: the last
 * shape of the collection is found by comparing keys, without a lookup per key.
 */
export function shapeOf(col: Collection, body: Record<string, unknown>): BodyShape {
  const last = lastShapes.get(col);
  if (last) {
    let i = 0;
    let same = true;
    for (const k in body) {
      if (last.keys[i++] !== k) {
        same = false;
        break;
      }
    }
    if (same && i === last.keys.length) return last;
  }
  const keys = Object.keys(body);
  const defs = keys.map((k) => {
    const def = col.fieldMap.get(k.toLowerCase());
    return def && def.name === k ? def : undefined;
  });
  const names: string[] = [];
  for (const def of defs) if (def) names.push(def.name);
  const shape = { keys, defs, names };
  lastShapes.set(col, shape);
  return shape;
}

export const SYSTEM_FIELDS = ["_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at"] as const;
export const SYSTEM_FIELD_TYPES: Record<string, FieldType> = {
  _id: "text",
  _created_at: "number",
  _updated_at: "number",
  _owner_id: "text",
  _deleted_at: "number",
};

export const DEFAULT_RULES: Rules = { read: "public", create: "authenticated", update: "owner", delete: "owner" };
export const OPERATIONS: Operation[] = ["read", "create", "update", "delete"];
export const MAX_FIELDS = 500;

export const NAME_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
// Route names under /api/v1 (a collection of that name could not be reached) and the engines' own prefixes.
const RESERVED = new Set(["auth", "admin", "health", "ready", "realtime", "openapi", "fn"]);

/** True when `name` may name a collection (CONTRACT §2). */
export function isValidCollectionName(name: unknown): name is string {
  if (typeof name !== "string" || !NAME_RE.test(name)) return false;
  const lower = name.toLowerCase();
  return !RESERVED.has(lower) && !lower.startsWith("sqlite_") && !lower.startsWith("pg_");
}

/**
 * Names the engines keep for a table's own columns, refused as field names on both so that a collection
 * holds the same fields on either: SQLite's row id (`rowid`, `oid`) and PostgreSQL's system columns.
 */
const ENGINE_COLUMN_NAMES = new Set(["rowid", "oid", "xmin", "xmax", "cmin", "cmax", "ctid", "tableoid"]);

/** True when `name` may name a user field. */
export function isValidFieldName(name: string): boolean {
  return NAME_RE.test(name) && !ENGINE_COLUMN_NAMES.has(name.toLowerCase());
}

/** The stored type a JSON value would give a new field; null for null. */
export function typeOfValue(v: unknown): FieldType | null {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case "string":
      return "text";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "object":
      return "json";
    default:
      return null;
  }
}

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

/** The junction table of a many_via relation; its name is built from the relation's generated id only. */
export function junctionTable(rel: Pick<Relation, "id">): string {
  return `_rel_${rel.id.toLowerCase()}`;
}
