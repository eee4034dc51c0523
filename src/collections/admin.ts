import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";
import { inTransaction } from "../transaction.ts";
import { activeRowStats } from "../query/rows.ts";
import { RuleError } from "../rules/expr/ast.ts";
import { ruleCatalog, withCollection, withoutCollection } from "../rules/expr/catalog.ts";
import { refuseIfRulesBreak } from "../rules/naming.ts";
import { checkRuleValue, invalidRule } from "../rules/expr/rule.ts";
import { checkRules, mergeRules, parseRuleValue, rulesGiven } from "../rules/validate.ts";
import { dropFtsBesideTable } from "../search/fts.ts";
import { collectionToJson, findCollection, listCollections, requireCollection, saveCollectionRow, touchCatalog } from "../catalog/catalog.ts";
import { addColumn, createCollectionTable, dropCollectionTable } from "./ddl.ts";
import { parseFieldList } from "./fields.ts";
import { DEFAULT_RULES, isValidCollectionName, OPERATIONS, type Collection, type Operation } from "../catalog/types.ts";
import { parseFieldRules } from "./validate.ts";
import { dropRelationsOf } from "./relations.ts";
import { deleteCollectionFiles } from "../files/values.ts";

export type CollectionJson = ReturnType<typeof collectionToJson>;

/**
 * Creates a collection and its table, with the fields it declares (CONTRACT §13); 400 for a bad name, rule or
 * field, 409 when the name is taken.
 */
export async function createCollection(ctx: AppContext, input: { name: string; rules?: unknown; field_rules?: unknown; fields?: unknown }): Promise<CollectionJson> {
  const { name, rules, field_rules } = input;
  if (!name) throw badRequest("name is required");
  if (!isValidCollectionName(name))
    throw badRequest(
      `invalid collection name "${String(name).slice(0, 80)}": use a letter then letters, digits or _ (at most 64), not auth, admin, health, ready, realtime, openapi, fn, sqlite_* or pg_*`,
    );
  const merged = mergeRules(DEFAULT_RULES, rules ?? undefined);
  const fieldRules = field_rules === undefined ? [] : parseFieldRules(field_rules);
  const fields = parseFieldList(input.fields);
  if (await findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
  const now = ctx.clock.now();
  await inTransaction(ctx, async () => {
    if (await findCollection(ctx, name)) throw new AppError(409, "conflict", `collection "${name}" already exists`);
    const col: Collection = {
      name,
      rules: merged,
      fieldRules,
      fields,
      fieldMap: new Map(fields.map((f) => [f.name.toLowerCase(), f])),
      indexes: [],
      fts: { enabled: false, fields: [] },
      createdAt: now,
      updatedAt: now,
    };
    // Expression rules name what exists: here, the other collections and the new one's system fields.
    checkRules(withCollection(await ruleCatalog(ctx), col), col, merged, rulesGiven(rules));
    await createCollectionTable(ctx.db, name);
    for (const f of fields) await addColumn(ctx.db, name, f.name, f.type);
    await saveCollectionRow(ctx, col);
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
    checkRules(await ruleCatalog(ctx), col, rules, rulesGiven(body.rules));
    const fieldRules = body.field_rules === undefined ? col.fieldRules : parseFieldRules(body.field_rules);
    await saveCollectionRow(ctx, { ...col, rules, fieldRules, updatedAt: ctx.clock.now() });
  });
  return collectionToJson(await requireCollection(ctx, name));
}

/**
 * `POST …/rules/check`: whether `rule` would be accepted as the `op` rule of the collection, without setting it
 * (the console's rule editor asks as one types). 200 `{ ok: true }`, else 400 with the message and, for an
 * expression, the 1-based `position` of the token it names.
 */
export async function checkCollectionRule(ctx: AppContext, name: string, body: { op?: unknown; rule?: unknown }): Promise<{ ok: true }> {
  const col = await requireCollection(ctx, name);
  const op = body.op;
  if (typeof op !== "string" || !OPERATIONS.includes(op as Operation)) throw badRequest("op must be one of read, create, update, delete");
  if (body.rule === undefined) throw badRequest("rule is required");
  const catalog = await ruleCatalog(ctx);
  try {
    // A string is a fixed word or an expression; anything else must be a role rule.
    const value = typeof body.rule === "string" ? body.rule : parseRuleValue(op, body.rule);
    checkRuleValue(catalog, col, op as Operation, value);
  } catch (err) {
    if (err instanceof RuleError) throw badRequest(invalidRule(op, err).message, { position: err.position });
    throw err;
  }
  return { ok: true };
}

/** Drops a collection: its table, indexes, full-text index and relations; once committed, its stored files. */
export async function deleteCollection(ctx: AppContext, name: string): Promise<{ ok: true }> {
  const col = await requireCollection(ctx, name);
  // Wall-clock, as the storage's file times are.
  const startedAt = Date.now();
  await inTransaction(ctx, async () => {
    refuseIfRulesBreak(withoutCollection(await ruleCatalog(ctx), col.name), `collection "${col.name}" cannot be deleted`);
    deleteCollectionFiles(ctx, col.name, startedAt);
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
