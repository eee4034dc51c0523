import type { AppContext } from "../context.ts";
import { randomToken, safeEqual, sha256 } from "../crypto.ts";
import { getMeta, setMeta } from "../db/meta.ts";
import { AppError } from "../errors.ts";
import { signJwt, verifyJwt } from "./jwt.ts";
import { jwtKey } from "./keys.ts";

export const ADMIN_TOKEN_TTL_SECONDS = 12 * 60 * 60;

/**
 * Makes sure an admin secret exists. ADMIN_SECRET from the environment wins; otherwise the
 * first start generates one. Only its hash is stored. Returns the secret when it was just
 * generated (to print once), else null.
 */
export function ensureAdminSecret(ctx: AppContext): string | null {
  const stored = getMeta(ctx.sqlite, "admin_secret_hash");
  if (ctx.config.adminSecret) {
    const hash = sha256(ctx.config.adminSecret);
    if (stored !== hash) {
      ctx.sqlite.transaction(() => {
        setMeta(ctx.sqlite, "admin_secret_hash", hash);
        bumpAdminEpoch(ctx);
      })();
    }
    return null;
  }
  if (stored) return null;
  return rotateAdminSecret(ctx);
}

function bumpAdminEpoch(ctx: AppContext): void {
  const epoch = Number(getMeta(ctx.sqlite, "admin_epoch") ?? "0") + 1;
  setMeta(ctx.sqlite, "admin_epoch", String(epoch));
}

/** Generates a new admin secret, stores its hash, and invalidates every admin token issued before. */
export function rotateAdminSecret(ctx: AppContext): string {
  const secret = `baas_admin_${randomToken(24)}`;
  ctx.sqlite.transaction(() => {
    setMeta(ctx.sqlite, "admin_secret_hash", sha256(secret));
    bumpAdminEpoch(ctx);
  })();
  return secret;
}

/** True when `candidate` is the admin secret. Re-reads the database so a CLI rotation applies at once. */
export function isAdminSecret(ctx: AppContext, candidate: string): boolean {
  const stored = getMeta(ctx.sqlite, "admin_secret_hash");
  if (!stored) return false;
  // IMPORTANT: constant-time compare of the hashes, else the secret's hash leaks through timing.
  return safeEqual(sha256(candidate), stored);
}

/** Issues an admin token (12 h) bound to the current admin epoch. */
export function issueAdminToken(ctx: AppContext): { token: string; expires_in: number } {
  const now = Math.floor(ctx.clock.now() / 1000);
  const epoch = Number(getMeta(ctx.sqlite, "admin_epoch") ?? "1");
  const token = signJwt(jwtKey(ctx), { typ: "admin", epoch, iat: now, exp: now + ADMIN_TOKEN_TTL_SECONDS });
  return { token, expires_in: ADMIN_TOKEN_TTL_SECONDS };
}

/** True when `token` is a live admin token (signature, expiry, and not issued before the last rotation). */
export function isAdminToken(ctx: AppContext, token: string): boolean {
  const claims = verifyJwt(jwtKey(ctx), token, ctx.clock.now());
  if (!claims || claims.typ !== "admin") return false;
  return claims.epoch === Number(getMeta(ctx.sqlite, "admin_epoch") ?? "1");
}

/** True for the admin secret or a live admin token. */
export function isAdminCredential(ctx: AppContext, value: string): boolean {
  // An ADMIN_SECRET set by the operator may itself contain dots, so a failed token check still tries the secret.
  return (value.split(".").length === 3 && isAdminToken(ctx, value)) || isAdminSecret(ctx, value);
}

/** `POST /admin/login`: exchanges the secret for an admin token. 10 wrong tries a minute per IP. */
export function adminLogin(ctx: AppContext, secret: unknown, ip: string): { token: string; expires_in: number } {
  let loginAttempts = ctx.cache.get("admin_login_attempts") as Map<string, number[]> | undefined;
  if (!loginAttempts) ctx.cache.set("admin_login_attempts", (loginAttempts = new Map()));
  const now = ctx.clock.now();
  // Forget IPs whose tries are all older than the window, so many clients cannot grow the map without bound.
  if (loginAttempts.size > 1000)
    for (const [key, times] of loginAttempts) if (times[times.length - 1] <= now - 60_000) loginAttempts.delete(key);
  const recent = (loginAttempts.get(ip) ?? []).filter((t) => t > now - 60_000);
  if (recent.length >= 10) {
    const retry = Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
    throw new AppError(429, "rate_limited", "too many admin login attempts; try again later", {}, { "Retry-After": String(retry) });
  }
  if (typeof secret !== "string" || !isAdminSecret(ctx, secret)) {
    // Only wrong secrets count: a console or script that logs in often must not lock itself out.
    recent.push(now);
    loginAttempts.set(ip, recent);
    throw new AppError(401, "invalid_credentials", "wrong admin secret");
  }
  if (recent.length) loginAttempts.set(ip, recent);
  return issueAdminToken(ctx);
}
