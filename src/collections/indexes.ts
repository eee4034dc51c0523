import type { AppContext } from "../context.ts";
import { inTransaction } from "../transaction.ts";
import { AppError, badRequest, bodyOf, conflict, notFound, type Checked } from "../errors.ts";
import { resolveField } from "../query/sql.ts";
import { requireCollection, saveCollectionRow } from "../catalog/catalog.ts";
import { createIndex, dropIndex, schemaNameTaken } from "./ddl.ts";
import { NAME_RE, type IndexDef } from "../catalog/types.ts";

export const MAX_INDEX_FIELDS = 16;
const MAX_NAME = 120;

/** `GET /admin/collections/:name/indexes`. */
export async function listIndexes(ctx: AppContext, name: string): Promise<{ items: IndexDef[] }> {
  return { items: (await requireCollection(ctx, name)).indexes };
}

async function nameTaken(ctx: AppContext, index: string): Promise<boolean> {
  return await schemaNameTaken(ctx.db, index);
}

/** A free index name: SQLite index names are global to the database, so the collection is part of it. */
async function pickName(ctx: AppContext, collection: string, fields: string[]): Promise<string> {
  const base = `idx_${collection}_${fields.join("_")}`.slice(0, MAX_NAME);
  let candidate = base;
  for (let n = 2; await nameTaken(ctx, candidate); n++) candidate = `${base.slice(0, MAX_NAME - 6)}_${n}`;
  return candidate;
}

/**
 * `POST …/indexes` with `{ fields, unique?, name? }` (CONTRACT §3): a single or multi-field
 * index, unique ones answer writes that break them with 409 `unique_violation`.
 */
export async function createIndexDef(ctx: AppContext, name: string, input: Checked<{ fields: string[]; unique?: boolean; name?: unknown }>): Promise<IndexDef> {
  const col = await requireCollection(ctx, name);
  const body = bodyOf(input);
  const fields = body.fields.map((f) => resolveField(col, f).name);
  if (new Set(fields).size !== fields.length) throw badRequest("a field appears twice in fields");
  const unique = body.unique === true;
  if (col.indexes.some((i) => i.unique === unique && i.fields.join("\0") === fields.join("\0")))
    throw conflict(`an index on (${fields.join(", ")}) already exists`);
  let indexName: string;
  if (body.name !== undefined) {
    if (typeof body.name !== "string" || !NAME_RE.test(body.name)) throw badRequest("name must be a valid identifier");
    if (await nameTaken(ctx, body.name)) throw conflict(`the name "${body.name}" is taken`);
    indexName = body.name;
  } else indexName = await pickName(ctx, col.name, fields);
  const def: IndexDef = { name: indexName, fields, unique };
  try {
    await inTransaction(ctx, async () => {
      await createIndex(ctx.db, col.name, indexName, fields, unique);
      await saveCollectionRow(ctx, { ...col, indexes: [...col.indexes, def], updatedAt: ctx.clock.now() });
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
export async function dropIndexDef(ctx: AppContext, name: string, index: string): Promise<{ ok: true }> {
  const col = await requireCollection(ctx, name);
  const def = col.indexes.find((i) => i.name.toLowerCase() === String(index).toLowerCase());
  if (!def) throw notFound(`index "${String(index).slice(0, 80)}" not found on collection "${col.name}"`);
  await inTransaction(ctx, async () => {
    await dropIndex(ctx.db, def.name);
    await saveCollectionRow(ctx, { ...col, indexes: col.indexes.filter((i) => i !== def), updatedAt: ctx.clock.now() });
  });
  return { ok: true };
}
