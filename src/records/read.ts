import { ANONYMOUS, type Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { lastKnownHandle, openCollection, pendingCheck } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { attachRelationFields, expandRecords, parseExpand } from "../relations/expand.ts";
import { badRequest } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { accessOf, checkAccess, recordNotFound } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { accessPasses } from "./access.ts";
import { keptRecord, rememberedRecord, type RecordAnswer } from "./read-cache.ts";
import { etagOf } from "./version.ts";

/** `GET /:collection/:id`: 404 for a missing, soft-deleted (unless asked for) or hidden record. */
export async function getRecord(
  ctx: AppContext,
  name: string,
  id: string,
  p: Principal,
  opts: { includeDeleted?: boolean; expand?: string[]; fields?: string[] | null } = {},
): Promise<RecordJson> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const access = checkAccess(h.col, "read", p);
  const expand = parseExpand(h, opts.expand);
  const record = await fetchRecord(ctx, h.col, id, true);
  if (!record || (record._deleted_at !== null && !opts.includeDeleted)) throw recordNotFound();
  if (access !== "all" && !(await accessPasses(ctx, access, p, record))) throw recordNotFound();
  // SECURITY: a soft-deleted record shows only to a caller whose delete rule holds for it (CONTRACT §12).
  if (record._deleted_at !== null) {
    const del = accessOf(h.col, "delete", p);
    if (!del || !(await accessPasses(ctx, del, p, record))) throw recordNotFound();
  }
  if (h.from.length) await attachRelationFields(ctx, h, [record], p);
  if (expand.length) await expandRecords(ctx, h, [record], expand, p);
  return opts.fields ? pickFields(h.name, record, opts.fields) : record;
}

/** Whether a collection's anonymous reads by id are the same for everyone: read rule `public`, no field read from another table. */
const answersAlike = (h: CollectionHandle) => h.col.rules.read === "public" && !h.from.length;

/**
 * anonymousRecordAnswer without waiting, where it would answer a kept read: the catalog needs no check now and
 * holds the collection, whose answers are alike, and the record's answer is kept. Else undefined (ask the other).
 */
export function keptAnonymousAnswer(ctx: AppContext, name: string, id: string): RecordAnswer | undefined {
  if (pendingCheck(ctx)) return undefined;
  const h = lastKnownHandle(ctx, name);
  return h && answersAlike(h) ? keptRecord(ctx, h.col.name, id) : undefined;
}

/**
 * An anonymous `GET /:collection/:id` (no expand, no fields) as its answer: the record's JSON text and ETag.
 * On a collection whose read rule is `public` and whose records carry no field read from another table, the
 * answer is the same for everyone, and is kept between reads of the unchanged collection (rememberedRecord).
 * Throws where getRecord does.
 */
export async function anonymousRecordAnswer(ctx: AppContext, name: string, id: string): Promise<RecordAnswer> {
  const h = await openCollection(ctx, name);
  const read = async (): Promise<RecordAnswer> => {
    const record = await getRecord(ctx, name, id, ANONYMOUS, { includeDeleted: false, expand: [], fields: null });
    return { body: JSON.stringify(record), etag: etagOf(record) };
  };
  if (!answersAlike(h)) return await read();
  return await rememberedRecord(ctx, h.col.name, id, read);
}

/**
 * `fields=a,b` on a single record, as on a list: `_id` plus the named fields under their own spelling (a
 * name matches in any letter case), and `_expand`; an unknown name is 400. The record carries every field
 * of its collection (null where unset), relation fields included.
 */
function pickFields(collection: string, record: RecordJson, names: readonly string[]): RecordJson {
  const keys = new Map<string, string>();
  for (const k in record) if (k !== "_expand") keys.set(k.toLowerCase(), k);
  const out: RecordJson = { _id: record._id };
  for (const f of names) {
    const key = keys.get(f.toLowerCase());
    if (key === undefined) throw badRequest(`unknown field "${f.slice(0, 80)}" in collection "${collection}"`);
    out[key] = record[key];
  }
  if (Object.hasOwn(record, "_expand")) out._expand = record._expand;
  return out;
}
