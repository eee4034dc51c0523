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

/** Default and largest `max_size` of a file field (CONTRACT §14). */
export const DEFAULT_FILE_SIZE = 5 * 1024 * 1024;
export const MAX_FILE_SIZE = 1024 * 1024 * 1024;
/** Most files one field may hold. */
export const MAX_FILE_COUNT = 100;
/** A media type or a family of them (`image/*`), as a `mime` list names them. */
const MIME_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126})$/;

/** `file` (CONTRACT §14): `max_size` (bytes, default 5 MiB, at most 1 GiB), `mime` (allowed types; default any), `max_count` (default 1). */
const file: FieldTypeSpec = {
  options(raw, where) {
    const extra = Object.keys(raw).find((k) => k !== "max_size" && k !== "mime" && k !== "max_count");
    if (extra !== undefined) throw badRequest(`${where}: unknown key "${extra.slice(0, 40)}" (a file field takes max_size, mime, max_count)`);
    const int = (key: string, fallback: number, max: number) => {
      const v = raw[key] ?? fallback;
      if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) throw badRequest(`${where}: "${key}" must be an integer from 1 to ${max}`);
      return v;
    };
    const max_size = int("max_size", DEFAULT_FILE_SIZE, MAX_FILE_SIZE);
    const max_count = int("max_count", 1, MAX_FILE_COUNT);
    const mime = raw.mime ?? [];
    if (!Array.isArray(mime) || mime.length > 100 || !mime.every((m) => typeof m === "string" && MIME_RE.test(m.toLowerCase())))
      throw badRequest(`${where}: "mime" must be a list of media types such as "image/png" or "image/*"`);
    return { max_size, mime: [...new Set(mime.map((m: string) => m.toLowerCase()))], max_count };
  },
};

const FIELD_TYPES: Record<FieldType, FieldTypeSpec> = { text: plain, number: plain, boolean: plain, json: plain, file };

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
  // Keys in one order: the same options read back from storage or parsed from a document compare equal.
  const text = (o: Record<string, unknown> | undefined) => JSON.stringify(Object.entries(o ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  return a.type === b.type && text(a.options) === text(b.options);
}
