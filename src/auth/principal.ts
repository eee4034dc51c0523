import type { AppContext } from "../context.ts";
import { ADMIN, ANONYMOUS, type Principal } from "../principal.ts";
import { sha256 } from "../crypto.ts";
import { AppError } from "../errors.ts";
import { checkAdminSecretGuess, invalidAdminCredentials, isAdminToken } from "./admin.ts";
import { isSignedJwt, looksLikeJwt, unexpiredClaims, verifyJwt } from "./jwt.ts";
import { jwtKey, loadedJwtKey } from "./keys.ts";
import { liveApiKeyByHash, liveApiKeyRows, touchApiKey } from "../tables/api-keys.ts";
import { liveSessionRows } from "../tables/sessions.ts";
import { parseMetadata, parseRoles, userAccessRow, type UserAccessRow } from "../tables/users.ts";
import { activeSession } from "./sessions.ts";
import { keptCheck } from "./kept-checks.ts";
import { requireVerifiedEmail } from "./verified.ts";

export const invalidToken = (message = "invalid or expired token") => new AppError(401, "unauthorized", message);

export interface CredentialHeaders {
  authorization?: string | null;
  adminToken?: string | null;
  apiKey?: string | null;
}

/**
 * Resolves the credentials of a request. Credentials that are present but wrong are a 401,
 * also on public routes: a client holding an expired token must learn to refresh it.
 * `allowApiKey` is false on `/auth/*`, where API keys do not act. `ip` gives the client address:
 * a value that could only be a guess at the admin secret counts toward its limit.
 */
export async function resolvePrincipal(ctx: AppContext, h: CredentialHeaders, opts: { allowApiKey: boolean; ip: () => string }): Promise<Principal> {
  if (h.adminToken) {
    const value = h.adminToken.trim();
    // A token signed with this server's key (an admin token, or a user's sent to the wrong header) is no guess at the secret.
    if (isSignedJwt(await jwtKey(ctx), value)) {
      if (await isAdminToken(ctx, value)) return ADMIN;
      throw invalidToken("invalid or expired admin token");
    }
    if (await checkAdminSecretGuess(ctx, value, opts.ip())) return ADMIN;
    throw invalidAdminCredentials();
  }
  if (h.authorization) {
    const m = /^Bearer\s+(.+)$/i.exec(h.authorization.trim());
    if (!m) throw invalidToken("the Authorization header must be 'Bearer <token>'");
    const token = m[1].trim();
    if (isSignedJwt(await jwtKey(ctx), token)) return fromSignedJwt(ctx, token);
    // A user's API key in the wrong header is a mistake, not a guess at the admin secret.
    if (await findApiKey(ctx, token)) throw invalidToken("send API keys in the X-API-Key header");
    if (await checkAdminSecretGuess(ctx, token, opts.ip())) return ADMIN;
    throw invalidAdminCredentials();
  }
  if (h.apiKey) {
    if (!opts.allowApiKey) throw invalidToken("API keys are not accepted on /auth endpoints");
    return userFromApiKey(ctx, h.apiKey.trim());
  }
  return ANONYMOUS;
}

/**
 * What CONTRACT §8c asks of a route that acts for no caller (register, login, refresh, health…): a Bearer or
 * `X-Admin-Token` value that can only be a guess at the admin secret (neither a token signed here, expired or
 * not, nor a live API key) is 401 and counts toward the admin limit of its address (429 past it); the admin secret
 * passes. A user's token is not looked at: an expired access token sent along with a refresh does not stop it.
 */
export async function refuseAdminGuess(ctx: AppContext, h: CredentialHeaders, ip: () => string): Promise<void> {
  // As resolvePrincipal reads them: X-Admin-Token first, else the Bearer token.
  const adminToken = h.adminToken?.trim();
  const value = adminToken || (h.authorization ? /^Bearer\s+(.+)$/i.exec(h.authorization.trim())?.[1]?.trim() : undefined);
  if (!value || isSignedJwt(await jwtKey(ctx), value)) return;
  if (!adminToken && (await findApiKey(ctx, value))) return;
  if (!(await checkAdminSecretGuess(ctx, value, ip()))) throw invalidAdminCredentials();
}

/**
 * A JWT signed with this server's key: a user's access token (session or impersonation) or an admin token.
 * The caller has checked the signature (isSignedJwt); here only `exp` and the claims are read.
 */
async function fromSignedJwt(ctx: AppContext, token: string): Promise<Principal> {
  const claims = unexpiredClaims(token, ctx.clock.now());
  if (!claims) throw invalidToken();
  if (claims.typ === "admin") {
    if (await isAdminToken(ctx, token)) return ADMIN;
    throw invalidToken("invalid or expired admin token");
  }
  const sub = claims.sub;
  if (typeof sub !== "string") throw invalidToken();
  // The token's `roles` claim is for clients to read; the principal takes the user's roles as stored now
  // (CONTRACT §12), read with the session check in one query.
  if (typeof claims.sid === "string") {
    // Checked at every request against what was committed when it asked: a revoked session fails at once.
    const user = await activeSession(ctx, claims.sid, sub);
    if (!user) throw invalidToken("session revoked or expired");
    return userPrincipal(sub, user, claims.sid, "token");
  }
  if (claims.imp === true) {
    // Impersonation tokens have no session; they live only for their short lifetime, while the user exists.
    const user = await userAccessRow(ctx.db, sub);
    if (!user) throw invalidToken();
    return userPrincipal(sub, user, null, "token");
  }
  throw invalidToken();
}

/** A user's principal, with the roles, metadata and address of the user's row as read for this request. */
export function userPrincipal(userId: string, row: UserAccessRow, sessionId: string | null, via: "token" | "api_key", apiKeyId?: string): Principal {
  const roles = parseRoles(row.roles);
  const metadata = parseMetadata(row.metadata);
  const verified = !!row.is_verified;
  return apiKeyId === undefined
    ? { kind: "user", userId, roles, metadata, email: row.email, verified, sessionId, via }
    : { kind: "user", userId, roles, metadata, email: row.email, verified, sessionId, via, apiKeyId };
}

/**
 * True when `authorization` carries a live admin impersonation token (signed here, `imp`, no
 * session). Synchronous: it runs before routing, on the key the server loaded at start.
 */
export function isImpersonationToken(ctx: AppContext, authorization: string | null): boolean {
  const token = authorization ? /^Bearer\s+(.+)$/i.exec(authorization.trim())?.[1].trim() : undefined;
  if (!token || !looksLikeJwt(token)) return false;
  const claims = verifyJwt(loadedJwtKey(ctx), token, ctx.clock.now());
  return claims?.imp === true;
}

/** The live API key `key` with its user's roles and metadata, or null. */
async function findApiKey(ctx: AppContext, key: string) {
  if (!key.startsWith("baas_") || key.length > 200) return null;
  const hash = sha256(key);
  return await keptCheck(ctx, `k\u0000${hash}`, () => liveApiKeyByHash(ctx.db, hash));
}

async function userFromApiKey(ctx: AppContext, key: string): Promise<Principal> {
  const row = await findApiKey(ctx, key);
  if (!row) throw invalidToken("invalid API key");
  // A key made before require_verified_email was turned on acts only once the address is confirmed.
  await requireVerifiedEmail(ctx, row);
  const now = ctx.clock.now();
  if (!row.last_used_at || now - row.last_used_at > 60_000) {
    await touchApiKey(ctx.db, row.id, now);
    row.last_used_at = now;
  }
  return userPrincipal(row.user_id, row, null, "api_key", row.id);
}

/**
 * SECURITY: called inside the write transaction that acts for a user, 401 when the credential the request came
 * with was revoked or expired since the request began (logout-all, a password reset, the owner's claim of a
 * pre-registered address). The principal was resolved before the request's awaits; without this, what such a
 * request creates (an API key, a second factor) would be stored after the revocation that should have ended it.
 */
export async function requireLiveCredential(ctx: AppContext, p: Principal): Promise<void> {
  if (p.kind !== "user") return;
  if (p.apiKeyId !== undefined) {
    if (!(await liveApiKeyRows(ctx.db, [p.apiKeyId])).length) throw invalidToken("invalid API key");
  } else if (p.sessionId !== null) {
    if (!(await liveSessionRows(ctx.db, [p.sessionId], ctx.clock.now())).length) throw invalidToken("session revoked or expired");
  } else if (!(await userAccessRow(ctx.db, p.userId))) throw invalidToken();
}
