import type { AppContext } from "../context.ts";
import type { ReadPlan, SqlValue } from "../query/sql.ts";

/**
 * Reads already made, so that repeating the same read on an unchanged collection does not run it again:
 * counts (a `total`), and the JSON text of list pages. Buckets by lower-cased collection name (`EXTERNAL`
 * for reads whose filter looks at other tables), entries by a key the caller builds from the statement
 * and its bound values, which carry the requester's scope (the owner filter, the rule's `@auth` values,
 * `@now`) and `include_deleted`. Each entry remembers the catalog's data version: another process's
 * commit moves it (seen at the next request, see refreshCatalog; on PostgreSQL any commit anywhere, this
 * process's own included, moves it).
 */
interface ReadCache {
  buckets: Map<string, Bucket>;
  /** Bumped by every invalidation: a read that ran across one is not kept (it may predate the commit). */
  generation: number;
  /** Characters of page text held in all buckets (counts weigh nothing). */
  size: number;
  /** Reads running now, by bucket and key: the same read asked meanwhile waits for it instead of running again. */
  flights: Map<string, { answer: Promise<unknown>; dataVersion: number; generation: number }>;
  /** Single records as answered to anyone (see rememberedRecord), by lower-cased collection name, then id. */
  records: Map<string, Map<string, KeptRecord>>;
  /** Characters of record text held in `records`. */
  recordsSize: number;
}

/** A record's answer: its JSON text and entity tag. */
export interface RecordAnswer {
  body: string;
  etag: string;
}

/** A record's answer as kept, with the data version it was read under. */
interface KeptRecord extends RecordAnswer {
  dataVersion: number;
}

interface Bucket {
  entries: Map<string, { value: unknown; dataVersion: number; size: number }>;
  size: number;
}

const CACHE_KEY = "reads";
const EXTERNAL = "\0external";
const MAX_PER_BUCKET = 1000;
/** Characters of page text kept at most, all collections together; a single page of more than a sixteenth is not kept. */
const MAX_SIZE = 16 * 1024 * 1024;

function readCache(ctx: AppContext): ReadCache {
  let cache = ctx.cache.get(CACHE_KEY) as ReadCache | undefined;
  if (cache) return cache;
  const made: ReadCache = { buckets: new Map(), generation: 0, size: 0, flights: new Map(), records: new Map(), recordsSize: 0 };
  const drop = (name: string) => {
    dropRecords(made, name);
    const bucket = made.buckets.get(name);
    if (!bucket) return;
    made.size -= bucket.size;
    made.buckets.delete(name);
  };
  // A committed change of records drops the reads of its collections and those looking at other tables;
  // a commit without change events (a schema change, an index) drops every read.
  ctx.events.onCommit((events) => {
    made.generation++;
    if (events.length === 0) {
      made.buckets.clear();
      made.size = 0;
      made.records.clear();
      made.recordsSize = 0;
      return;
    }
    drop(EXTERNAL);
    for (const e of events) drop(e.collection.toLowerCase());
  });
  ctx.cache.set(CACHE_KEY, made);
  return made;
}

/**
 * Bound values as key text, one spelling per distinct value. Not JSON.stringify, which writes Infinity,
 * -Infinity and NaN all as null (a filter of `1e999` is Infinity) and -0 as 0; a string is quoted, so it
 * never reads as a number or null, and its commas stay inside its quotes.
 */
function paramsKey(params: readonly SqlValue[]): string {
  let key = "";
  for (const v of params) key += `${typeof v === "string" ? JSON.stringify(v) : Object.is(v, -0) ? "-0" : String(v)},`;
  return key;
}

/** The key of a plan's rows: its FROM and WHERE with their bound values. */
function planKey(plan: ReadPlan): string {
  return `${plan.from.sql} WHERE ${plan.where.sql}\0${paramsKey(plan.from.params)}\0${paramsKey(plan.where.params)}`;
}

/**
 * `read()` of a plan, or what the same read (the same plan's rows, and the same `key`, which must name everything
 * else the answer depends on) gave on the collection unchanged since. `size`: the characters the value holds
 * (0 for a number). Not kept inside a write transaction (the answer may include changes that roll back) nor
 * for a full-text search (its index may still be building).
 */
export async function remembered<T>(ctx: AppContext, plan: ReadPlan, collection: string, key: string, read: () => Promise<T>, size: (value: T) => number = () => 0): Promise<T> {
  if (plan.search || ctx.db.inTransaction()) return await read();
  const cache = readCache(ctx);
  const name = plan.external ? EXTERNAL : collection.toLowerCase();
  // Both taken before reading: a commit that lands while the read runs (its invalidation, or a moved data
  // version) leaves the result unkept, or kept under a version already gone. (Reads do not wait for a
  // transaction open meanwhile: one that commits before this read is stored may postdate it.)
  const dataVersion = ctx.catalog.dataVersion;
  const generation = cache.generation;
  key = `${key}\0${planKey(plan)}`;
  const hit = cache.buckets.get(name)?.entries.get(key);
  if (hit && hit.dataVersion === dataVersion) return hit.value as T;
  // The same read already running, started since the last change seen: its answer is as good as a kept one
  // (many clients asking one page right after a write wait for one read, not one each).
  const flightKey = `${name}\0${key}`;
  const flying = cache.flights.get(flightKey);
  if (flying && flying.dataVersion === dataVersion && flying.generation === generation) return (await flying.answer) as T;
  const flight = { answer: read(), dataVersion, generation };
  cache.flights.set(flightKey, flight);
  let value: T;
  try {
    value = (await flight.answer) as T;
  } finally {
    if (cache.flights.get(flightKey) === flight) cache.flights.delete(flightKey);
  }
  // The key counts too: a list's URL may hold 100 filters (kilobytes of key for a count of a few bytes).
  const weight = size(value) + key.length;
  if (cache.generation !== generation || weight > MAX_SIZE / 16) return value;
  let bucket = cache.buckets.get(name);
  if (!bucket) cache.buckets.set(name, (bucket = { entries: new Map(), size: 0 }));
  if (bucket.entries.size >= MAX_PER_BUCKET) {
    cache.size -= bucket.size;
    bucket.entries.clear();
    bucket.size = 0;
  }
  if (cache.size + weight > MAX_SIZE) {
    cache.buckets.clear();
    cache.size = 0;
    cache.buckets.set(name, bucket);
    bucket.entries.clear();
    bucket.size = 0;
  }
  const old = bucket.entries.get(key);
  if (old) {
    bucket.size -= old.size;
    cache.size -= old.size;
  }
  bucket.entries.set(key, { value, dataVersion, size: weight });
  bucket.size += weight;
  cache.size += weight;
  return value;
}

/** Records kept at most per collection, and characters of record text in all; a record of more than MAX_RECORD_TEXT is not kept. */
const MAX_RECORDS_PER_COLLECTION = 10_000;
const MAX_RECORDS_SIZE = 16 * 1024 * 1024;
const MAX_RECORD_TEXT = 64 * 1024;

function dropRecords(cache: ReadCache, name: string): void {
  const kept = cache.records.get(name);
  if (!kept) return;
  for (const r of kept.values()) cache.recordsSize -= r.body.length;
  cache.records.delete(name);
}

/** The answer rememberedRecord keeps for a record, when it holds one as of the catalog's data version; else undefined. */
export function keptRecord(ctx: AppContext, collection: string, id: string): RecordAnswer | undefined {
  return ctx.db.inTransaction() ? undefined : keptNow(ctx, readCache(ctx), collection.toLowerCase(), id);
}

/** keptRecord outside a transaction (the caller knows), for the lower-cased collection name. */
function keptNow(ctx: AppContext, cache: ReadCache, name: string, id: string): KeptRecord | undefined {
  const hit = cache.records.get(name)?.get(id);
  return hit && hit.dataVersion === ctx.catalog.dataVersion ? hit : undefined;
}

/**
 * A single record's answer that is the same for every requester (a collection whose read rule is `public`,
 * with no field read from another table), read by `read` or kept from the last time on the collection
 * unchanged since: the JSON text and the ETag, so a repeated read neither queries nor serialises. Dropped
 * with the collection's other kept reads (any committed change of one of its records, any schema change,
 * another process's commit). `read` throws where the record is not answered (missing, soft-deleted).
 */
export async function rememberedRecord(ctx: AppContext, collection: string, id: string, read: () => Promise<RecordAnswer>): Promise<RecordAnswer> {
  if (ctx.db.inTransaction()) return await read();
  const cache = readCache(ctx);
  const name = collection.toLowerCase();
  const dataVersion = ctx.catalog.dataVersion;
  const generation = cache.generation;
  const hit = keptNow(ctx, cache, name, id);
  if (hit) return hit;
  const answer = await read();
  // As in `remembered`: a commit while the read ran leaves it unkept.
  if (cache.generation !== generation || answer.body.length > MAX_RECORD_TEXT) return answer;
  const value: KeptRecord = { body: answer.body, etag: answer.etag, dataVersion };
  let kept = cache.records.get(name);
  if (kept && kept.size >= MAX_RECORDS_PER_COLLECTION) {
    dropRecords(cache, name);
    kept = undefined;
  }
  if (cache.recordsSize + value.body.length > MAX_RECORDS_SIZE) {
    cache.records.clear();
    cache.recordsSize = 0;
    kept = undefined;
  }
  if (!kept) cache.records.set(name, (kept = new Map()));
  const old = kept.get(id);
  if (old) cache.recordsSize -= old.body.length;
  kept.set(id, value);
  cache.recordsSize += value.body.length;
  return value;
}
