import type { AppContext } from "../context.ts";
import { inTransaction } from "../db/tx.ts";
import { AppError, badRequest, conflict, notFound } from "../errors.ts";
import { resolveField } from "../query/sql.ts";
import { requireCollection, saveCollectionRow } from "./catalog.ts";
import { createIndex, dropIndex } from "./ddl.ts";
import { NAME_RE, type IndexDef } from "./types.ts";

const MAX_INDEX_FIELDS = 16;
const MAX_NAME = 120;

/** `GET /admin/collections/:name/indexes`. */
export function listIndexes(ctx: AppContext, name: string): { items: IndexDef[] } {
  return { items: requireCollection(ctx, name).indexes };
}

function nameTaken(ctx: AppContext, index: string): boolean {
  return !!ctx.sqlite.query("SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?)").get(index);
}

/** A free index name: SQLite index names are global to the database, so the collection is part of it. */
function pickName(ctx: AppContext, collection: string, fields: string[]): string {
  const base = `idx_${collection}_${fields.join("_")}`.slice(0, MAX_NAME);
  let candidate = base;
  for (let n = 2; nameTaken(ctx, candidate); n++) candidate = `${base.slice(0, MAX_NAME - 6)}_${n}`;
  return candidate;
}

/**
 * `POST …/indexes` with `{ fields, unique?, name? }` (CONTRACT §3): a single or multi-field
 * index, unique ones answer writes that break them with 409 `unique_violation`.
 */
export function createIndexDef(ctx: AppContext, name: string, input: unknown): IndexDef {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object");
  const body = input as { fields?: unknown; unique?: unknown; name?: unknown };
  const col = requireCollection(ctx, name);
  if (!Array.isArray(body.fields) || !body.fields.length || body.fields.length > MAX_INDEX_FIELDS)
    throw badRequest(`fields must be an array of 1 to ${MAX_INDEX_FIELDS} field names`);
  if (body.unique !== undefined && typeof body.unique !== "boolean") throw badRequest("unique must be true or false");
  const fields = body.fields.map((f) => {
    if (typeof f !== "string") throw badRequest("fields must be an array of field names");
    return resolveField(col, f).name;
  });
  if (new Set(fields).size !== fields.length) throw badRequest("a field appears twice in fields");
  const unique = body.unique === true;
  if (col.indexes.some((i) => i.unique === unique && i.fields.join("\0") === fields.join("\0")))
    throw conflict(`an index on (${fields.join(", ")}) already exists`);
  let indexName: string;
  if (body.name !== undefined) {
    if (typeof body.name !== "string" || !NAME_RE.test(body.name)) throw badRequest("name must be a valid identifier");
    if (nameTaken(ctx, body.name)) throw conflict(`the name "${body.name}" is taken`);
    indexName = body.name;
  } else indexName = pickName(ctx, col.name, fields);
  const def: IndexDef = { name: indexName, fields, unique };
  try {
    inTransaction(ctx, () => {
      createIndex(ctx.sqlite, col.name, indexName, fields, unique);
      saveCollectionRow(ctx, { ...col, indexes: [...col.indexes, def], updatedAt: ctx.clock.now() });
    });
  } catch (err) {
    if (err instanceof AppError && err.code === "unique_violation")
      throw new AppError(409, "unique_violation", `existing records have duplicate values in (${fields.join(", ")})`, {
        fields,
      });
    throw err;
  }
  return def;
}

/** `DELETE …/indexes/:index`. */
export function dropIndexDef(ctx: AppContext, name: string, index: string): { ok: true } {
  const col = requireCollection(ctx, name);
  const def = col.indexes.find((i) => i.name.toLowerCase() === String(index).toLowerCase());
  if (!def) throw notFound(`index "${String(index).slice(0, 80)}" not found on collection "${col.name}"`);
  inTransaction(ctx, () => {
    dropIndex(ctx.sqlite, def.name);
    saveCollectionRow(ctx, { ...col, indexes: col.indexes.filter((i) => i !== def), updatedAt: ctx.clock.now() });
  });
  return { ok: true };
}
