import type { AppContext } from "../context.ts";
import { q } from "../collections/ddl.ts";
import { findCollection, saveCollectionRow } from "../collections/catalog.ts";
import { addColumn } from "../collections/ddl.ts";
import { MAX_FIELDS, SYSTEM_FIELDS, isValidFieldName, typeOfValue, type Collection, type FieldDef } from "../collections/types.ts";
import { ValidationError, badRequest, type FieldError } from "../errors.ts";
import { ftsAfterNewFields } from "../search/fts.ts";

export type RecordJson = Record<string, unknown>;

const TYPE_WORD: Record<string, string> = {
  text: "a string",
  number: "a number",
  boolean: "a boolean",
  json: "an object or array",
};

/** The SELECT list of a collection: system fields then user fields, all quoted. */
export function selectList(col: Collection, fields?: string[]): string {
  const names = fields ?? [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)];
  return names.map(q).join(", ");
}

/** Converts a stored row into the record's JSON: booleans as true/false, json fields parsed. */
export function decodeRow(col: Collection, row: Record<string, unknown>): RecordJson {
  for (const f of col.fields) {
    const v = row[f.name];
    if (v === null || v === undefined) continue;
    if (f.type === "boolean") row[f.name] = v === 1 || v === true;
    else if (f.type === "json" && typeof v === "string") {
      try {
        row[f.name] = JSON.parse(v);
      } catch {
        // A value written by another tool that is not JSON: return it as stored.
      }
    }
  }
  return row;
}

/** Converts a JSON value into what its column stores. */
export function encodeValue(type: FieldDef["type"], v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v ? 1 : 0;
  if (type === "json") return JSON.stringify(v);
  return v as string | number;
}

/** A request body as a plain object, else 400. */
export function asObject(body: unknown, what = "the request body"): Record<string, unknown> {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw badRequest(`${what} must be a JSON object`);
  return body as Record<string, unknown>;
}

/** The user fields of a body: system fields (anything starting with `_`) are ignored. */
export function userFields(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!k.startsWith("_")) out[k] = body[k];
  return out;
}

/**
 * Checks field names and value types against the collection (CONTRACT §2). Unknown fields
 * with a non-null value become new columns (inside the caller's transaction); returns the
 * collection as it is after that. Throws 422 listing every problem.
 */
export function ensureFields(ctx: AppContext, col: Collection, data: Record<string, unknown>): Collection {
  // Re-read inside the write transaction: a change another process (the CLI) committed after the
  // caller looked the collection up must be neither missed nor overwritten by the row saved below.
  col = findCollection(ctx, col.name) ?? col;
  const errors: FieldError[] = [];
  const fresh: FieldDef[] = [];
  for (const name in data) {
    const value = data[name];
    if (!isValidFieldName(name)) {
      errors.push({ field: name, rule: "name", message: `"${name}" is not a valid field name.` });
      continue;
    }
    const t = typeOfValue(value);
    if (value !== null && t === null) {
      errors.push({ field: name, rule: "type", message: `"${name}" has an unsupported value.` });
      continue;
    }
    if (typeof value === "number" && !Number.isFinite(value)) {
      errors.push({ field: name, rule: "type", message: `"${name}" must be a finite number.` });
      continue;
    }
    const known = col.fieldMap.get(name.toLowerCase());
    if (known) {
      if (known.name !== name)
        errors.push({ field: name, rule: "name", message: `"${name}" conflicts with the field "${known.name}".` });
      else if (t !== null && t !== known.type)
        errors.push({ field: name, rule: "type", message: `"${name}" must be ${TYPE_WORD[known.type]}.` });
    } else if (t !== null) {
      if (fresh.some((f) => f.name.toLowerCase() === name.toLowerCase()))
        errors.push({ field: name, rule: "name", message: `"${name}" conflicts with another field of the same name.` });
      else fresh.push({ name, type: t });
    }
  }
  if (!errors.length && fresh.length && col.fields.length + fresh.length > MAX_FIELDS)
    errors.push({ field: fresh[0].name, rule: "fields", message: `a collection has at most ${MAX_FIELDS} fields.` });
  if (errors.length) throw new ValidationError(errors);
  if (!fresh.length) return col;
  for (const f of fresh) addColumn(ctx.sqlite, col.name, f.name, f.type);
  const fields = [...col.fields, ...fresh];
  const fts = ftsAfterNewFields(ctx, col, fields);
  saveCollectionRow(ctx, { ...col, fields, fts, updatedAt: col.updatedAt });
  return findCollection(ctx, col.name)!;
}

/** The by-id SELECT of each catalog entry (entries are replaced, never changed, on a schema change). */
const fetchSql = new WeakMap<Collection, string>();

/** Reads one record by id (soft-deleted ones too); null when there is none. */
export function fetchRecord(ctx: AppContext, col: Collection, id: string): RecordJson | null {
  if (typeof id !== "string" || id.length > 64) return null;
  let sql = fetchSql.get(col);
  if (sql === undefined) fetchSql.set(col, (sql = `SELECT ${selectList(col)} FROM ${q(col.name)} WHERE "_id" = ?`));
  const row = ctx.sqlite.query<Record<string, unknown>, [string]>(sql).get(id);
  return row ? decodeRow(col, row) : null;
}
