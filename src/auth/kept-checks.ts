import type { AppContext } from "../context.ts";
import { sharedRead } from "../db/shared-read.ts";
import { credentialsVersion } from "../tables/users.ts";

/**
 * Credential checks (a session, an API key, each with its user's access) kept between requests while the
 * credentials version stands. SECURITY: triggers move it with every revocation or deletion of a session or an API
 * key and every change of a user's access or deletion of a user, by any process (migrations 0012 and 0017).
 * Each request reads the version anew (a read begun after it asked, shared by the requests that ask together), so
 * a revocation holds from the first request after its commit; what costs is the row, read once per credential and
 * version instead of once per request (on PostgreSQL most of a small write's database time).
 */
interface KeptChecks {
  /** The version the rows were read under (each after it was read); "" before the first. */
  version: string;
  rows: Map<string, object>;
  /** About how much the kept rows hold (their text), in characters. */
  size: number;
  /** The version as committed when asked. */
  versionNow: () => Promise<string>;
}

const keptOf = new WeakMap<AppContext["db"], KeptChecks>();
/** Checks kept at most, and the text they may hold in all: past either the cache starts again empty. */
const MAX_KEPT = 10_000;
const MAX_KEPT_TEXT = 4 << 20;
/**
 * A row holding more text than this (a user's metadata may hold 64 KiB) is read at every request instead: kept, the
 * sessions of one such user could fill the cache with copies of it.
 */
const MAX_ROW_TEXT = 4096;

function empty(kept: KeptChecks): void {
  kept.rows.clear();
  kept.size = 0;
}

/** The text a row holds, in characters. */
function textOf(row: object): number {
  let n = 0;
  for (const v of Object.values(row)) if (typeof v === "string") n += v.length;
  return n;
}

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
    keptOf.set(db, (kept = { version: "", rows: new Map(), size: 0, versionNow: sharedRead(() => credentialsVersion(db)) }));
  }
  const version = await kept.versionNow();
  // Any other version (one read is shared at a time, so a later reading is a later version; a number reset by hand
  // counts as a change too).
  if (version !== kept.version) {
    empty(kept);
    kept.version = version;
  }
  const row = kept.rows.get(key);
  if (row) return row as T;
  // IMPORTANT: the row after the version it is kept under; kept only while no other version was seen meanwhile.
  const fresh = await read();
  if (!fresh || kept.version !== version) return fresh;
  const size = textOf(fresh) + key.length;
  if (size > MAX_ROW_TEXT) return fresh;
  if (kept.rows.size >= MAX_KEPT || kept.size + size > MAX_KEPT_TEXT) empty(kept);
  kept.rows.set(key, fresh);
  kept.size += size;
  return fresh;
}
