import type { AppContext } from "../context.ts";
import { openCollection, saveCollectionRow } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { addColumn } from "./ddl.ts";
import { MAX_FIELDS, isValidFieldName, shapeOf, typeOfValue, type Collection, type FieldDef } from "../catalog/types.ts";
import { ValidationError, type FieldError } from "../errors.ts";
import { ftsAfterNewFields } from "../search/fts.ts";
import { validateFieldRules } from "./validate.ts";

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

const NO_FIELDS: readonly FieldDef[] = Object.freeze([]);

/**
 * Checks field names and value types of a body against the collection (CONTRACT §2), and returns the
 * fields it names that the collection does not have yet (unknown fields with a non-null value: empty for
 * most writes). Throws 422 listing every problem: the field rules' failures (for a `mode` write) among the
 * fields whose names and types pass, in `field_rules` order, then those of names and types (CONTRACT §4: all
 * failures are listed). Call it with the collection as resolved in the write transaction (the caller's
 * handle), so that a change another process committed is neither missed nor overwritten when the new fields
 * are added (addFields).
 */
export function newFieldsOf(col: Collection, data: Record<string, unknown>, mode: "create" | "update"): readonly FieldDef[] {
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
  if (errors.length) throw new ValidationError([...validateFieldRules(col, without(data, errors), mode), ...errors]);
  return fresh.length ? fresh : NO_FIELDS;
}

/** `data` without the fields that `errors` name. */
function without(data: Record<string, unknown>, errors: readonly FieldError[]): Record<string, unknown> {
  const rest = { ...data };
  for (const e of errors) delete rest[e.field];
  return rest;
}

/**
 * Adds fields newFieldsOf found as columns (with their full-text triggers and catalog row), inside the
 * caller's write transaction; returns the collection's handle as it is after that.
 */
export async function addFields(ctx: AppContext, h: CollectionHandle, fresh: readonly FieldDef[]): Promise<CollectionHandle> {
  const col = h.col;
  for (const f of fresh) await addColumn(ctx.db, col.name, f.name, f.type);
  const fields = [...col.fields, ...fresh];
  const fts = await ftsAfterNewFields(ctx, col, fields);
  await saveCollectionRow(ctx, { ...col, fields, fts, updatedAt: col.updatedAt }, { fields: "add" });
  return await openCollection(ctx, col.name);
}
