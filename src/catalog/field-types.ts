import { badRequest } from "../errors.ts";
import { isValidFieldName, type FieldDef, type FieldType } from "./types.ts";

// The types a field may be declared with (CONTRACT §13), and the options each takes. A type with options (such
// as `file`, §14: max_size, mime, max_count) adds an entry here whose `options` reads them: its definition then
// carries them, the collection object shows them beside `name` and `type`, and a schema file sets them.

interface FieldTypeSpec {
  /** Reads the options of a declaration (every key but `name`, `type` and `renamed_from`); 400 naming `where` when one is wrong. */
  options(raw: Record<string, unknown>, where: string): Record<string, unknown> | undefined;
}

/** A type without options: any other key is a mistake. */
const plain: FieldTypeSpec = {
  options(raw, where) {
    const extra = Object.keys(raw)[0];
    if (extra !== undefined) throw badRequest(`${where}: unknown key "${extra.slice(0, 40)}"`);
    return undefined;
  },
};

const FIELD_TYPES: Record<FieldType, FieldTypeSpec> = { text: plain, number: plain, boolean: plain, json: plain };

/** The types a field may be declared with, for messages and documentation. */
export const DECLARABLE_TYPES = Object.keys(FIELD_TYPES) as FieldType[];

/** True when `t` names a field type. */
export function isFieldType(t: unknown): t is FieldType {
  return typeof t === "string" && Object.hasOwn(FIELD_TYPES, t);
}

/** 400 unless `t` names a field type. */
export function parseFieldType(t: unknown, where: string): FieldType {
  if (!isFieldType(t)) throw badRequest(`${where}: "type" must be one of ${DECLARABLE_TYPES.join(", ")}`);
  return t;
}

/**
 * A field declaration `{ name, type, ...options }` (a collection's create, `POST …/fields`, a schema file) as a
 * definition; 400 naming `where` for a bad name, type or option. `extra` lists keys the caller reads itself
 * (a schema file's `renamed_from`), which are left out.
 */
export function parseFieldDecl(input: unknown, where: string, extra: readonly string[] = []): FieldDef {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest(`${where} must be an object { name, type }`);
  const { name, type, ...rest } = input as Record<string, unknown>;
  if (typeof name !== "string" || !name) throw badRequest(`${where}: "name" is required`);
  if (!isValidFieldName(name))
    throw badRequest(`${where}: invalid field name "${name.slice(0, 80)}": use a letter then letters, digits or _ (at most 64)`);
  const t = parseFieldType(type, `${where} ("${name}")`);
  for (const k of extra) delete rest[k];
  const options = FIELD_TYPES[t].options(rest, `${where} ("${name}")`);
  return options ? { name, type: t, options } : { name, type: t };
}

/** A field as the collection object shows it (CONTRACT §2): name, type and the options of its type. */
export function fieldToJson(f: FieldDef): { name: string; type: FieldType } & Record<string, unknown> {
  return f.options ? { name: f.name, type: f.type, ...f.options } : { name: f.name, type: f.type };
}

/** Whether two definitions declare the same thing (name aside): type and options. */
export function sameDeclaration(a: FieldDef, b: FieldDef): boolean {
  return a.type === b.type && JSON.stringify(a.options ?? {}) === JSON.stringify(b.options ?? {});
}
