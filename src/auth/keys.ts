import type { AppContext } from "../context.ts";
import { randomToken } from "../crypto.ts";
import { getMeta, setMeta, setMetaIfAbsent } from "../db/meta.ts";

/**
 * The JWT signing key: generated at first start, kept in the database, cached in memory (it never
 * changes). Once loaded it is read from memory (every request verifies a token with it).
 */
export async function jwtKey(ctx: AppContext): Promise<string> {
  return (ctx.cache.get("jwt_key") as string | undefined) ?? await loadJwtKey(ctx);
}

/** The key when ensureJwtKey has loaded it, which the server does before it takes requests. */
export function loadedJwtKey(ctx: AppContext): string {
  const key = ctx.cache.get("jwt_key") as string | undefined;
  if (key === undefined) throw new Error("the JWT key is not loaded: ensureJwtKey runs before the app takes requests");
  return key;
}

async function loadJwtKey(ctx: AppContext): Promise<string> {
  let key = (await getMeta(ctx.db, "jwt_key")) ?? undefined;
  if (!key) {
    const fresh = randomToken(32);
    await setMetaIfAbsent(ctx.db, "jwt_key", fresh);
    key = (await getMeta(ctx.db, "jwt_key"))!;
  }
  ctx.cache.set("jwt_key", key);
  return key;
}

/** Creates the JWT key now if missing (first start). */
export async function ensureJwtKey(ctx: AppContext): Promise<void> {
  await jwtKey(ctx);
  if (!await getMeta(ctx.db, "admin_epoch")) await setMeta(ctx.db, "admin_epoch", "1");
}
