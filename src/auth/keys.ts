import type { AppContext } from "../context.ts";
import { randomToken } from "../crypto.ts";
import { getMeta, setMeta } from "../db/meta.ts";

/** The JWT signing key: generated at first start, kept in the database, cached in memory (it never changes). */
export function jwtKey(ctx: AppContext): string {
  let key = ctx.cache.get("jwt_key") as string | undefined;
  if (key) return key;
  key = getMeta(ctx.sqlite, "jwt_key") ?? undefined;
  if (!key) {
    const fresh = randomToken(32);
    ctx.sqlite.query("INSERT OR IGNORE INTO _meta (key, value) VALUES ('jwt_key', ?)").run(fresh);
    key = getMeta(ctx.sqlite, "jwt_key")!;
  }
  ctx.cache.set("jwt_key", key);
  return key;
}

/** Creates the JWT key now if missing (first start). */
export function ensureJwtKey(ctx: AppContext): void {
  jwtKey(ctx);
  if (!getMeta(ctx.sqlite, "admin_epoch")) setMeta(ctx.sqlite, "admin_epoch", "1");
}
