import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";
import { inTransaction } from "../db/tx.ts";
import { mergeRules } from "../rules/validate.ts";
import { dropFtsObjects } from "../search/fts.ts";
import { collectionToJson, findCollection, listCollections, requireCollection, saveCollectionRow, touchCatalog } from "./catalog.ts";
import { createCollectionTable, dropCollectionTable, q } from "./ddl.ts";
import { DEFAULT_RULES, isValidCollectionName } from "./types.ts";
import { parseFieldRules } from "./validate.ts";
import { dropRelationsOf } from "../relations/catalog.ts";

export type CollectionJson = ReturnType<typeof collectionToJson>;

/** Creates a collection and its table; 400 for a bad name or rule, 409 when the name is taken. */
export function createCollection(ctx: AppContext, input: unknown): CollectionJson {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object");
  const { name, rules, field_rules } = input as { name?: unknown; rules?: unknown; field_rules?: unknown };
  if (typeof name !== "string" || !name) throw badRequest("name is required");
  if (!isValidCollectionName(name))
    throw badRequest(
      `invalid collection name "${String(name).slice(0, 80)}": use a letter then letters, digits or _ (at most 64), not auth, admin, health, realtime, openapi, sqlite_* or pg_*`,
    );
  const merged = mergeRules(DEFAULT_RULES, rules ?? undefined);
  const fieldRules = field_rules === undefined ? [] : parseFieldRules(field_rules);
  if (findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
  const now = ctx.clock.now();
  inTransaction(ctx, () => {
    if (findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
    createCollectionTable(ctx.sqlite, name);
    saveCollectionRow(ctx, {
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
  return collectionToJson(requireCollection(ctx, name));
}

/** All collections. */
export function listCollectionsJson(ctx: AppContext): { items: CollectionJson[] } {
  return { items: listCollections(ctx).map(collectionToJson) };
}

/** One collection, or 404. */
export function getCollectionJson(ctx: AppContext, name: string): CollectionJson {
  return collectionToJson(requireCollection(ctx, name));
}

/**
 * `PUT …/rules` and `PATCH …/:name`: `rules` may be partial (given keys replace),
 * `field_rules` replaces the list. At least one must be given.
 */
export function updateCollectionRules(ctx: AppContext, name: string, input: unknown): CollectionJson {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object");
  const body = input as Record<string, unknown>;
  for (const k of Object.keys(body))
    if (k !== "rules" && k !== "field_rules" && k !== "name") throw badRequest(`unknown key "${k}": expected rules or field_rules`);
  if (body.rules === undefined && body.field_rules === undefined) throw badRequest("give rules, field_rules or both");
  // Read and write in one transaction: another process's change in between is neither lost nor overwritten.
  inTransaction(ctx, () => {
    const col = requireCollection(ctx, name);
    if (body.name !== undefined && body.name !== col.name) throw badRequest("a collection cannot be renamed");
    const rules = mergeRules(col.rules, body.rules);
    const fieldRules = body.field_rules === undefined ? col.fieldRules : parseFieldRules(body.field_rules);
    saveCollectionRow(ctx, { ...col, rules, fieldRules, updatedAt: ctx.clock.now() });
  });
  return collectionToJson(requireCollection(ctx, name));
}

/** Drops a collection: its table, indexes, full-text index and relations. */
export function deleteCollection(ctx: AppContext, name: string): { ok: true } {
  const col = requireCollection(ctx, name);
  inTransaction(ctx, () => {
    dropRelationsOf(ctx, col.name);
    dropFtsObjects(ctx.sqlite, col.name);
    dropCollectionTable(ctx.sqlite, col.name);
    ctx.sqlite.query("DELETE FROM _collections WHERE name = ?").run(col.name);
    touchCatalog(ctx);
  });
  return { ok: true };
}

/** `GET …/stats`: non-deleted row count and the latest write among them. */
export function collectionStats(ctx: AppContext, name: string): { row_count: number; last_write: number | null } {
  const col = requireCollection(ctx, name);
  const row = ctx.sqlite
    .query<{ n: number; last: number | null }, []>(
      `SELECT COUNT(*) AS n, MAX("_updated_at") AS last FROM ${q(col.name)} WHERE "_deleted_at" IS NULL`,
    )
    .get()!;
  return { row_count: row.n, last_write: row.last };
}
