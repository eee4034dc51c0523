import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { bodyOf, type Checked } from "../errors.ts";
import { parseReadQuery, type ReadOptions } from "../query/parse.ts";
import { planRead, runRead, type ReadPlan, type SqlValue } from "../query/sql.ts";
import { relationFilter } from "../relations/filter.ts";
import { checkAccess } from "../rules/access.ts";

/**
 * Counts already made, so that repeating the same count on an unchanged collection does not scan
 * again. Buckets by lower-cased collection name (`EXTERNAL` for counts whose filter looks at other
 * tables), entries by the statement and its bound values, which carry the requester's scope (the
 * owner filter) and `include_deleted`. Each entry remembers the catalog's data version: another
 * process's commit moves it (seen at the next request, see refreshCatalog).
 */
interface CountCache {
  buckets: Map<string, Map<string, { n: number; dataVersion: number }>>;
}

const CACHE_KEY = "counts";
const EXTERNAL = "\0external";
const MAX_PER_BUCKET = 1000;

function countCache(ctx: AppContext): CountCache {
  let cache = ctx.cache.get(CACHE_KEY) as CountCache | undefined;
  if (cache) return cache;
  const made: CountCache = { buckets: new Map() };
  // A committed change of records drops the counts of its collections and those looking at other
  // tables; a commit without change events (a schema change, an index) drops every count.
  ctx.events.onCommit((events) => {
    if (events.length === 0) return made.buckets.clear();
    made.buckets.delete(EXTERNAL);
    for (const e of events) made.buckets.delete(e.collection.toLowerCase());
  });
  ctx.cache.set(CACHE_KEY, made);
  return made;
}

/** COUNT(*) over a read plan; a count of the same plan on an unchanged collection is answered from memory. */
export async function countPlan(ctx: AppContext, plan: ReadPlan, collection: string): Promise<number> {
  const run = () =>
    runRead(plan, async () =>
      (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${plan.from.sql} WHERE ${plan.where.sql}`, [...plan.from.params, ...plan.where.params]))!.n,
    );
  // Inside a write transaction the count may include changes that roll back; full-text matches
  // depend on an index that may still be building: neither is kept.
  // On PostgreSQL other nodes write without this process learning of it: nothing is kept there.
  if (plan.search || ctx.db.inTransaction() || ctx.db.dialect === "postgres") return await run();
  const buckets = countCache(ctx).buckets;
  const name = plan.external ? EXTERNAL : collection.toLowerCase();
  const key = `${plan.from.sql} WHERE ${plan.where.sql}\0${JSON.stringify(plan.where.params)}`;
  const dataVersion = ctx.catalog.dataVersion;
  const hit = buckets.get(name)?.get(key);
  if (hit && hit.dataVersion === dataVersion) return hit.n;
  const n = await run();
  let bucket = buckets.get(name);
  if (!bucket) buckets.set(name, (bucket = new Map()));
  else if (bucket.size >= MAX_PER_BUCKET) bucket.clear();
  bucket.set(key, { n, dataVersion });
  return n;
}

/** `GET /:collection/count`: how many records match `filter`/`search`, honouring the read rule. */
export async function countRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal, opts: Checked<ReadOptions>): Promise<{ total: number }> {
  const col = await requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  return { total: await countPlan(ctx, planRead(ctx, col, parseReadQuery(params, bodyOf(opts)), access, p, await relationFilter(ctx)), col.name) };
}
