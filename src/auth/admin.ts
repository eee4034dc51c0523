import type { AppContext } from "../context.ts";
import { randomToken, safeEqual, sha256 } from "../crypto.ts";
import { getMeta, setMeta, setMetaIfAbsent } from "../db/meta.ts";
import { AppError, conflict } from "../errors.ts";
import { signJwt, verifyJwt } from "./jwt.ts";
import { jwtKey } from "./keys.ts";
import { noteAdminAttempt, pruneAdminAttempts, recentAdminAttempts } from "../tables/admin-attempts.ts";

export const ADMIN_TOKEN_TTL_SECONDS = 12 * 60 * 60;
/** The shortest ADMIN_SECRET the server starts with (CONTRACT §8c). */
export const MIN_ADMIN_SECRET_LENGTH = 16;

/** Where the admin secret in effect comes from: the environment, the data directory, or generated just now. */
export type AdminSecretSource = "env" | "stored" | "generated";

export interface AdminSecretState {
  source: AdminSecretSource;
  /** The secret when it was just generated (first start, to print once), else null. */
  generated: string | null;
  /** True when ADMIN_SECRET differs from the stored secret and has replaced it (admin tokens issued before end). */
  replacedStored: boolean;
}

/** Meta key remembering whether the last server start on this data directory had ADMIN_SECRET set. */
const SOURCE_META = "admin_secret_source";

/**
 * Settles the admin secret at server start. One rule: when ADMIN_SECRET is set it IS the secret (its hash
 * replaces a different stored one, which the caller reports); otherwise the stored secret is used, and the
 * first start generates one. Only hashes are stored.
 */
export async function ensureAdminSecret(ctx: AppContext): Promise<AdminSecretState> {
  const stored = await getMeta(ctx.db, "admin_secret_hash");
  if (ctx.config.adminSecret) {
    const hash = sha256(ctx.config.adminSecret);
    const replacedStored = stored !== null && stored !== hash;
    await ctx.db.transaction(async () => {
      if (stored !== hash) {
        await setMeta(ctx.db, "admin_secret_hash", hash);
        await bumpAdminEpoch(ctx);
      }
      await setMeta(ctx.db, SOURCE_META, "env");
    });
    return { source: "env", generated: null, replacedStored };
  }
  await setMeta(ctx.db, SOURCE_META, "stored");
  if (stored) return { source: "stored", generated: null, replacedStored: false };
  const generated = await storeFirstSecret(ctx);
  return generated ? { source: "generated", generated, replacedStored: false } : { source: "stored", generated: null, replacedStored: false };
}

/**
 * Generates and stores the first admin secret, unless another process sharing the database (a node
 * started at the same time) stored one first: then null, and that one is the secret, so no node
 * prints a secret that does not work.
 */
async function storeFirstSecret(ctx: AppContext): Promise<string | null> {
  const secret = `baas_admin_${randomToken(24)}`;
  return await ctx.db.transaction(async () => {
    if (!await setMetaIfAbsent(ctx.db, "admin_secret_hash", sha256(secret))) return null;
    await bumpAdminEpoch(ctx);
    return secret;
  });
}

async function bumpAdminEpoch(ctx: AppContext): Promise<void> {
  const epoch = Number(await getMeta(ctx.db, "admin_epoch") ?? "0") + 1;
  await setMeta(ctx.db, "admin_epoch", String(epoch));
}

async function storeNewSecret(ctx: AppContext): Promise<string> {
  const secret = `baas_admin_${randomToken(24)}`;
  await ctx.db.transaction(async () => {
    await setMeta(ctx.db, "admin_secret_hash", sha256(secret));
    await bumpAdminEpoch(ctx);
  });
  return secret;
}

/**
 * Generates a new admin secret, stores its hash, and invalidates every admin token issued before.
 * Refused (409) while ADMIN_SECRET is the secret, here or for the server of this data directory:
 * the server would put ADMIN_SECRET back at its next start and the rotated secret would silently stop working.
 */
export async function rotateAdminSecret(ctx: AppContext): Promise<string> {
  const why = ctx.config.adminSecret
    ? "ADMIN_SECRET is set"
    : await getMeta(ctx.db, SOURCE_META) === "env"
      ? "ADMIN_SECRET is set for the server of this data directory (it was last started with it)"
      : null;
  if (why)
    throw conflict(
      `${why}, so it is the admin secret and cannot be rotated: change ADMIN_SECRET and restart the server, ` +
        "or start the server without ADMIN_SECRET to use a stored secret that rotate-secret can replace",
    );
  return await storeNewSecret(ctx);
}

/** Wrong admin credentials allowed per client address per window (CONTRACT §8b, §8c). */
export const ADMIN_GUESS_LIMIT = 10;
export const ADMIN_GUESS_WINDOW_MS = 60_000;

/** True when `candidate` is the admin secret. Re-reads the database so a CLI rotation applies at once. */
async function isAdminSecret(ctx: AppContext, candidate: string): Promise<boolean> {
  const stored = await getMeta(ctx.db, "admin_secret_hash");
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
export async function checkAdminSecretGuess(ctx: AppContext, candidate: string, ip: string): Promise<boolean> {
  const now = ctx.clock.now();
  const since = now - ADMIN_GUESS_WINDOW_MS;
  // IMMEDIATE: count, compare and record hold the write lock together, so parallel guesses cannot overshoot.
  return await ctx.db.transaction(async () => {
      const recent = await recentAdminAttempts(ctx.db, ip, since);
      if (recent.n >= ADMIN_GUESS_LIMIT) {
        const retry = Math.max(1, Math.ceil(((recent.first ?? now) + ADMIN_GUESS_WINDOW_MS - now) / 1000));
        throw new AppError(429, "rate_limited", "too many admin login attempts; try again later", {}, { "Retry-After": String(retry) });
      }
      if (await isAdminSecret(ctx, candidate)) return true;
      // Tries older than the window are dropped as new ones come, so many addresses cannot grow the table without bound.
      await pruneAdminAttempts(ctx.db, since);
      await noteAdminAttempt(ctx.db, ip, now);
      return false;
    });
}

/** 401 for a wrong admin secret or admin token. */
export const invalidAdminCredentials = (code = "unauthorized") => new AppError(401, code, "invalid admin credentials");

/** Issues an admin token (12 h) bound to the current admin epoch. */
export async function issueAdminToken(ctx: AppContext): Promise<{ token: string; expires_in: number }> {
  const now = Math.floor(ctx.clock.now() / 1000);
  const epoch = Number(await getMeta(ctx.db, "admin_epoch") ?? "1");
  const token = signJwt(await jwtKey(ctx), { typ: "admin", epoch, iat: now, exp: now + ADMIN_TOKEN_TTL_SECONDS });
  return { token, expires_in: ADMIN_TOKEN_TTL_SECONDS };
}

/** True when `token` is a live admin token (signature, expiry, and not issued before the last rotation). */
export async function isAdminToken(ctx: AppContext, token: string): Promise<boolean> {
  const claims = verifyJwt(await jwtKey(ctx), token, ctx.clock.now());
  if (!claims || claims.typ !== "admin") return false;
  return claims.epoch === Number(await getMeta(ctx.db, "admin_epoch") ?? "1");
}

/**
 * True while `value` is still a valid admin credential (the secret or a live admin token). A re-check
 * of a credential that was accepted before (a realtime stream), so it is not counted as a guess.
 */
export async function isAdminCredential(ctx: AppContext, value: string): Promise<boolean> {
  // An ADMIN_SECRET set by the operator may itself contain dots, so a failed token check still tries the secret.
  return (value.split(".").length === 3 && await isAdminToken(ctx, value)) || await isAdminSecret(ctx, value);
}

/** `POST /admin/login`: exchanges the secret for an admin token. 10 wrong tries a minute per IP. */
export async function adminLogin(ctx: AppContext, secret: unknown, ip: string): Promise<{ token: string; expires_in: number }> {
  if (!await checkAdminSecretGuess(ctx, typeof secret === "string" ? secret : "", ip)) throw invalidAdminCredentials("invalid_credentials");
  return issueAdminToken(ctx);
}
