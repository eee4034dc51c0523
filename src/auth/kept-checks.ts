import type { AppContext } from "../context.ts";
import { sharedRead } from "../db/shared-read.ts";
import { usersAccessVersion } from "../tables/users.ts";

/**
 * Credential checks (a session, an API key, each with its user's access) kept between requests while the users'
 * access version stands. SECURITY: triggers move the version with every revocation or deletion of a session or an
 * API key and every change of a user's access or deletion of a user, by any process (migrations 0012 and 0015).
 * Each request reads the version anew (a read begun after it asked, shared by the requests that ask together), so
 * a revocation holds from the first request after its commit; what costs is the row, read once per credential and
 * version instead of once per request (on PostgreSQL most of a small write's database time).
 */
interface KeptChecks {
  /** The version the rows were read under (each after it was read); "" before the first. */
  version: string;
  rows: Map<string, object>;
  /** The version as committed when asked. */
  versionNow: () => Promise<string>;
}

const keptOf = new WeakMap<AppContext["db"], KeptChecks>();
/** Checks kept at most: past that the cache starts again empty. */
const MAX_KEPT = 10_000;

/** Whether version `a` came after `b` (both decimal numbers; "" before any). */
const later = (a: string, b: string) => (a.length !== b.length ? a.length > b.length : a > b);

/**
 * The row `read` answers for credential `key` (a session id, an API key's hash: distinct by a prefix), as committed
 * when the caller asked: kept from an earlier read while the version stands. A null answer is not kept. Inside a
 * write transaction, read as it is (its own changes count, and its view may be older than the cache's).
 */
export async function keptCheck<T extends object>(ctx: AppContext, key: string, read: () => Promise<T | null>): Promise<T | null> {
  if (ctx.db.inTransaction()) return await read();
  let kept = keptOf.get(ctx.db);
  if (!kept) {
    const db = ctx.db;
    keptOf.set(db, (kept = { version: "", rows: new Map(), versionNow: sharedRead(() => usersAccessVersion(db)) }));
  }
  const version = await kept.versionNow();
  if (later(version, kept.version)) {
    kept.rows.clear();
    kept.version = version;
  }
  // A kept row was read after a version at least as late as this request's.
  const row = kept.rows.get(key);
  if (row) return row as T;
  // IMPORTANT: the row after the version it is kept under; kept only while no later version was seen meanwhile.
  const fresh = await read();
  if (fresh && kept.version === version) {
    if (kept.rows.size >= MAX_KEPT) kept.rows.clear();
    kept.rows.set(key, fresh);
  }
  return fresh;
}
