import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";
import { inTransaction } from "../transaction.ts";
import { activeRowStats } from "../query/rows.ts";
import { mergeRules } from "../rules/validate.ts";
import { dropFtsBesideTable } from "../search/fts.ts";
import { collectionToJson, findCollection, listCollections, requireCollection, saveCollectionRow, touchCatalog } from "../catalog/catalog.ts";
import { createCollectionTable, dropCollectionTable } from "./ddl.ts";
import { DEFAULT_RULES, isValidCollectionName } from "../catalog/types.ts";
import { parseFieldRules } from "./validate.ts";
import { dropRelationsOf } from "./relations.ts";

export type CollectionJson = ReturnType<typeof collectionToJson>;

/** Creates a collection and its table; 400 for a bad name or rule, 409 when the name is taken. */
export async function createCollection(ctx: AppContext, input: { name: string; rules?: unknown; field_rules?: unknown }): Promise<CollectionJson> {
  const { name, rules, field_rules } = input;
  if (!name) throw badRequest("name is required");
  if (!isValidCollectionName(name))
    throw badRequest(
      `invalid collection name "${String(name).slice(0, 80)}": use a letter then letters, digits or _ (at most 64), not auth, admin, health, realtime, openapi, sqlite_* or pg_*`,
    );
  const merged = mergeRules(DEFAULT_RULES, rules ?? undefined);
  const fieldRules = field_rules === undefined ? [] : parseFieldRules(field_rules);
  if (await findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
  const now = ctx.clock.now();
  await inTransaction(ctx, async () => {
    if (await findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
    await createCollectionTable(ctx.db, name);
    await saveCollectionRow(ctx, {
      name,
      rules: merged,
      fieldRules,
      fields: [],
      indexes: [],
      fts: { enabled: false, fields: [] },
      createdAt: now,
      updatedAt: now,
    });
  });
  return collectionToJson(await requireCollection(ctx, name));
}

/** All collections. */
export async function listCollectionsJson(ctx: AppContext): Promise<{ items: CollectionJson[] }> {
  return { items: (await listCollections(ctx)).map(collectionToJson) };
}

/** One collection, or 404. */
export async function getCollectionJson(ctx: AppContext, name: string): Promise<CollectionJson> {
  return collectionToJson(await requireCollection(ctx, name));
}

/**
 * `PUT …/rules` and `PATCH …/:name`: `rules` may be partial (given keys replace),
 * `field_rules` replaces the list. At least one must be given.
 */
export async function updateCollectionRules(ctx: AppContext, name: string, body: { rules?: unknown; field_rules?: unknown; name?: unknown }): Promise<CollectionJson> {
  if (body.rules === undefined && body.field_rules === undefined) throw badRequest("give rules, field_rules or both");
  // Read and write in one transaction: another process's change in between is neither lost nor overwritten.
  await inTransaction(ctx, async () => {
    const col = await requireCollection(ctx, name);
    if (body.name !== undefined && body.name !== col.name) throw badRequest("a collection cannot be renamed");
    const rules = mergeRules(col.rules, body.rules);
    const fieldRules = body.field_rules === undefined ? col.fieldRules : parseFieldRules(body.field_rules);
    await saveCollectionRow(ctx, { ...col, rules, fieldRules, updatedAt: ctx.clock.now() });
  });
  return collectionToJson(await requireCollection(ctx, name));
}

/** Drops a collection: its table, indexes, full-text index and relations. */
export async function deleteCollection(ctx: AppContext, name: string): Promise<{ ok: true }> {
  const col = await requireCollection(ctx, name);
  await inTransaction(ctx, async () => {
    await dropRelationsOf(ctx, col.name);
    // Whatever of a full-text index the table does not take with it (also what an interrupted change may have left).
    await dropFtsBesideTable(ctx.db, col.name);
    await dropCollectionTable(ctx.db, col.name);
    await ctx.db.run("DELETE FROM _collections WHERE name = ?", [col.name]);
    await touchCatalog(ctx);
  });
  return { ok: true };
}

/** `GET …/stats`: non-deleted row count and the latest write among them. */
export async function collectionStats(ctx: AppContext, name: string): Promise<{ row_count: number; last_write: number | null }> {
  const col = await requireCollection(ctx, name);
  const row = await activeRowStats(ctx, col.name);
  return { row_count: row.n, last_write: row.last };
}
