import type { AppContext } from "../context.ts";
import { findCollection, requireCollection, saveCollectionRow } from "./catalog.ts";
import { addColumn } from "./ddl.ts";
import { MAX_FIELDS, isValidFieldName, shapeOf, typeOfValue, type Collection, type FieldDef } from "./types.ts";
import { ValidationError, type FieldError } from "../errors.ts";
import { ftsAfterNewFields } from "../search/fts.ts";

/**
 * Schema growth: a record that sets a field the collection does not have yet adds it as a
 * column (with its full-text triggers and catalog row), inside the writer's transaction.
 */

const TYPE_WORD: Record<string, string> = {
  text: "a string",
  number: "a number",
  boolean: "a boolean",
  json: "an object or array",
  file: "a file name",
};

/**
 * Checks field names and value types against the collection (CONTRACT §2). Unknown fields
 * with a non-null value become new columns (inside the caller's transaction); returns the
 * collection as it is after that. Throws 422 listing every problem. Without new fields (most
 * writes) and with the catalog current, it answers without a promise.
 */
export function ensureFields(ctx: AppContext, col: Collection, data: Record<string, unknown>): Collection | Promise<Collection> {
  // Re-read inside the write transaction: a change another process (the CLI) committed after the
  // caller looked the collection up must be neither missed nor overwritten by the row saved below;
  // a collection deleted meanwhile is 404.
  const current = requireCollection(ctx, col.name);
  if (current instanceof Promise) return current.then((c) => checkFields(ctx, c, data));
  return checkFields(ctx, current, data);
}

/**
 * ensureFields against `col` as given, for a caller that has just looked it up inside its write transaction
 * (see insertPlainRun): `col` itself when every field exists, else the collection once the new ones are added.
 */
export function checkFields(ctx: AppContext, col: Collection, data: Record<string, unknown>): Collection | Promise<Collection> {
  const errors: FieldError[] = [];
  const fresh: FieldDef[] = [];
  const shape = shapeOf(col, data);
  let i = 0;
  for (const name in data) {
    const value = data[name];
    const exact = shape.defs[i++];
    // A lone surrogate cannot be stored as UTF-8: both engines keep U+FFFD instead, so the answer (built from
    // the body) does too.
    if (typeof value === "string" && !value.isWellFormed()) data[name] = value.toWellFormed();
    // A field of the collection under its own name (most writes): its name was checked when it was added.
    if (exact && (value === null || typeOfValue(value) === exact.type)) {
      if (typeof value === "number" && !Number.isFinite(value))
        errors.push({ field: name, rule: "type", message: `"${name}" must be a finite number.` });
      continue;
    }
    const known = col.fieldMap.get(name.toLowerCase());
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
    if (known) {
      if (known.name !== name)
        errors.push({ field: name, rule: "name", message: `"${name}" conflicts with the field "${known.name}".` });
      // A file field's value (a name or a list of names) is checked by the store (files/values.ts).
      else if (t !== null && t !== known.type && known.type !== "file")
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
  return addFields(ctx, col, fresh);
}

async function addFields(ctx: AppContext, col: Collection, fresh: FieldDef[]): Promise<Collection> {
  for (const f of fresh) await addColumn(ctx.db, col.name, f.name, f.type);
  const fields = [...col.fields, ...fresh];
  const fts = await ftsAfterNewFields(ctx, col, fields);
  await saveCollectionRow(ctx, { ...col, fields, fts, updatedAt: col.updatedAt }, { fields: "add" });
  return (await findCollection(ctx, col.name))!;
}
