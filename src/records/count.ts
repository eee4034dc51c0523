import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { parseReadQuery, type ReadOptions } from "../query/parse.ts";
import { countRows } from "../query/read.ts";
import { planRead, runRead, type ReadPlan, type SqlValue } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";

/**
 * Counts already made, so that repeating the same count on an unchanged collection does not scan
 * again. Buckets by lower-cased collection name (`EXTERNAL` for counts whose filter looks at other
 * tables), entries by the statement and its bound values, which carry the requester's scope (the
 * owner filter) and `include_deleted`. Each entry remembers the catalog's data version: another
 * process's commit moves it (seen at the next request, see refreshCatalog; on PostgreSQL any commit
 * anywhere, this process's own included, moves it).
 */
interface CountCache {
  buckets: Map<string, Map<string, { n: number; dataVersion: number }>>;
  /** Bumped by every invalidation: a count that ran across one is not kept (it may predate the commit). */
  generation: number;
}

const CACHE_KEY = "counts";
const EXTERNAL = "\0external";
const MAX_PER_BUCKET = 1000;

function countCache(ctx: AppContext): CountCache {
  let cache = ctx.cache.get(CACHE_KEY) as CountCache | undefined;
  if (cache) return cache;
  const made: CountCache = { buckets: new Map(), generation: 0 };
  // A committed change of records drops the counts of its collections and those looking at other
  // tables; a commit without change events (a schema change, an index) drops every count.
  ctx.events.onCommit((events) => {
    made.generation++;
    if (events.length === 0) return made.buckets.clear();
    made.buckets.delete(EXTERNAL);
    for (const e of events) made.buckets.delete(e.collection.toLowerCase());
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

/** COUNT(*) over a read plan; a count of the same plan on an unchanged collection is answered from memory. */
export async function countPlan(ctx: AppContext, plan: ReadPlan, collection: string): Promise<number> {
  const run = () => runRead(ctx, plan, () => countRows(ctx, plan));
  // Inside a write transaction the count may include changes that roll back; full-text matches
  // depend on an index that may still be building: neither is kept.
  if (plan.search || ctx.db.inTransaction()) return await run();
  const cache = countCache(ctx);
  const buckets = cache.buckets;
  const name = plan.external ? EXTERNAL : collection.toLowerCase();
  const key = `${plan.from.sql} WHERE ${plan.where.sql}\0${paramsKey(plan.where.params)}`;
  // Both taken before counting: a commit that lands while the count runs (its invalidation, or a moved
  // data version) leaves the result unkept, or kept under a version already gone. (Reads do not wait for
  // a transaction open meanwhile: one that commits before this count is stored may postdate it.)
  const dataVersion = ctx.catalog.dataVersion;
  const generation = cache.generation;
  const hit = buckets.get(name)?.get(key);
  if (hit && hit.dataVersion === dataVersion) return hit.n;
  const n = await run();
  if (cache.generation !== generation) return n;
  let bucket = buckets.get(name);
  if (!bucket) buckets.set(name, (bucket = new Map()));
  else if (bucket.size >= MAX_PER_BUCKET) bucket.clear();
  bucket.set(key, { n, dataVersion });
  return n;
}

/** `GET /:collection/count`: how many records match `filter`/`search`, honouring the read rule. */
export async function countRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ReadOptions>): Promise<{ total: number }> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const access = checkAccess(h.col, "read", p);
  return { total: await countPlan(ctx, planRead(ctx, h, parseReadQuery(params, bodyOf(opts)), access, p, relationCondition), h.name) };
}
