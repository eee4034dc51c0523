import type { AppContext } from "../context.ts";
import { randomToken, safeEqual, sha256 } from "../crypto.ts";
import { getMeta, setMeta } from "../db/meta.ts";
import { AppError } from "../errors.ts";
import { signJwt, verifyJwt } from "./jwt.ts";
import { jwtKey } from "./keys.ts";

export const ADMIN_TOKEN_TTL_SECONDS = 12 * 60 * 60;
/** The shortest ADMIN_SECRET the server starts with (CONTRACT §8c). */
export const MIN_ADMIN_SECRET_LENGTH = 16;

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

/** Wrong admin credentials allowed per client address per window (CONTRACT §8b, §8c). */
export const ADMIN_GUESS_LIMIT = 10;
export const ADMIN_GUESS_WINDOW_MS = 60_000;

/** True when `candidate` is the admin secret. Re-reads the database so a CLI rotation applies at once. */
function isAdminSecret(ctx: AppContext, candidate: string): boolean {
  const stored = getMeta(ctx.sqlite, "admin_secret_hash");
  if (!stored) return false;
  // IMPORTANT: constant-time compare of the hashes, else the secret's hash leaks through timing.
  return safeEqual(sha256(candidate), stored);
}

/**
 * Compares a guess with the admin secret, wherever one is presented (`/admin/login`, a Bearer or
 * `X-Admin-Token` value on any route). IMPORTANT: wrong guesses are counted per client address in
 * the database, and once an address has ADMIN_GUESS_LIMIT in the window it gets 429 `rate_limited`
 * without any comparison, so the secret cannot be guessed at speed, from one process or several.
 * Only wrong guesses count: a console or script that presents the secret often is never limited.
 */
export function checkAdminSecretGuess(ctx: AppContext, candidate: string, ip: string): boolean {
  const now = ctx.clock.now();
  const since = now - ADMIN_GUESS_WINDOW_MS;
  // IMMEDIATE: count, compare and record hold the write lock together, so parallel guesses cannot overshoot.
  return ctx.sqlite
    .transaction(() => {
      const recent = ctx.sqlite
        .query<{ n: number; first: number | null }, [string, number]>(
          "SELECT COUNT(*) AS n, MIN(at) AS first FROM _admin_attempts WHERE ip = ? AND at > ?",
        )
        .get(ip, since)!;
      if (recent.n >= ADMIN_GUESS_LIMIT) {
        const retry = Math.max(1, Math.ceil(((recent.first ?? now) + ADMIN_GUESS_WINDOW_MS - now) / 1000));
        throw new AppError(429, "rate_limited", "too many admin login attempts; try again later", {}, { "Retry-After": String(retry) });
      }
      if (isAdminSecret(ctx, candidate)) return true;
      // Tries older than the window are dropped as new ones come, so many addresses cannot grow the table without bound.
      ctx.sqlite.query("DELETE FROM _admin_attempts WHERE at <= ?").run(since);
      ctx.sqlite.query("INSERT INTO _admin_attempts (ip, at) VALUES (?, ?)").run(ip, now);
      return false;
    })
    .immediate();
}

/** 401 for a wrong admin secret or admin token. */
export const invalidAdminCredentials = (code = "unauthorized") => new AppError(401, code, "invalid admin credentials");

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

/** `POST /admin/login`: exchanges the secret for an admin token. 10 wrong tries a minute per IP. */
export function adminLogin(ctx: AppContext, secret: unknown, ip: string): { token: string; expires_in: number } {
  if (!checkAdminSecretGuess(ctx, typeof secret === "string" ? secret : "", ip)) throw invalidAdminCredentials("invalid_credentials");
  return issueAdminToken(ctx);
}
