import { newUlid } from "../ids.ts";
import type { AppContext } from "../context.ts";
import { randomToken, sha256 } from "../crypto.ts";
import { AppError } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserById, userToJson, type UserJson, type UserRow } from "../users/users.ts";
import { revokeUserApiKeyRows } from "../tables/api-keys.ts";
import { forgetUsedRefreshTokens, insertRefreshToken, markRefreshTokenUsed, refreshTokenByHash } from "../tables/refresh-tokens.ts";
import {
  activeUserSessionRows,
  insertSession,
  revokeSessionRow,
  revokeUserSessionRows,
  sessionById,
  sessionCheckRow,
  touchSession,
} from "../tables/sessions.ts";
import type { UserAccessRow } from "../tables/users.ts";
import { keptCheck } from "./kept-checks.ts";
import { signJwt } from "./jwt.ts";
import { requireVerifiedEmail } from "./verified.ts";
import { jwtKey } from "./keys.ts";

export type { SessionRow } from "../tables/sessions.ts";

/** The session response of CONTRACT §7. */
export interface SessionResponse {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: "Bearer";
  user: UserJson;
}

export interface ClientInfo {
  ip?: string | null;
  userAgent?: string | null;
  /** Aborted when the client goes away (a password check waiting for its turn is then not made). */
  signal?: AbortSignal | null;
}

const invalidRefresh = () => new AppError(401, "invalid_token", "invalid or expired refresh token");

/** Signs an access token for a user and session with the current TTL setting. */
export async function signAccessToken(ctx: AppContext, user: UserRow, sid: string | null, ttlSeconds?: number) {
  const ttl = ttlSeconds ?? await getSetting(ctx, "access_token_ttl_seconds");
  const now = Math.floor(ctx.clock.now() / 1000);
  const claims: Record<string, unknown> = { sub: user.id, roles: JSON.parse(user.roles), iat: now, exp: now + ttl };
  if (sid) claims.sid = sid;
  else claims.imp = true;
  return { token: signJwt(await jwtKey(ctx), claims), expiresIn: ttl };
}

async function issueRefreshToken(ctx: AppContext, sessionId: string, expiresAt: number): Promise<string> {
  const token = `${sessionId}.${randomToken(32)}`;
  await insertRefreshToken(ctx.db, sha256(token), sessionId, ctx.clock.now(), expiresAt);
  return token;
}

async function sessionResponse(ctx: AppContext, user: UserRow, sessionId: string, refreshToken: string): Promise<SessionResponse> {
  const { token, expiresIn } = await signAccessToken(ctx, user, sessionId);
  return { access_token: token, refresh_token: refreshToken, expires_in: expiresIn, token_type: "Bearer", user: userToJson(user) };
}

/** Starts a session for a user (login, register, magic link, 2FA, OAuth) and returns the tokens. */
export async function createSession(ctx: AppContext, user: UserRow, client: ClientInfo = {}, stillValid?: () => Promise<void>): Promise<SessionResponse> {
  const now = ctx.clock.now();
  const expiresAt = now + await getSetting(ctx, "refresh_token_ttl_days") * 86_400_000;
  const id = newUlid(now);
  const refresh = await ctx.db.transaction(async () => {
    // In the session's own transaction: a change that revokes the user's sessions (a password reset) either
    // committed before, and this refuses, or commits after, and revokes this one too.
    await stillValid?.();
    await insertSession(ctx.db, { id, userId: user.id, now, expiresAt, ip: client.ip ?? null, userAgent: client.userAgent?.slice(0, 512) ?? null });
    return issueRefreshToken(ctx, id, expiresAt);
  });
  return sessionResponse(ctx, user, id, refresh);
}

/** Used refresh tokens a session keeps (see forgetUsedRefreshTokens): a replay of one of them revokes the session. */
export const USED_REFRESH_TOKENS_KEPT = 20;

/**
 * Rotates a refresh token. A token presented a second time means it was stolen (or
 * replayed): the whole session is revoked, so neither the thief nor the user keeps it.
 */
export async function refreshSession(ctx: AppContext, refreshToken: unknown): Promise<SessionResponse> {
  if (typeof refreshToken !== "string" || !refreshToken || refreshToken.length > 512) throw invalidRefresh();
  const now = ctx.clock.now();
  const result = await ctx.db.transaction(async () => {
    const row = await refreshTokenByHash(ctx.db, sha256(refreshToken));
    if (!row) return null;
    if (row.used_at !== null) {
      await revokeSession(ctx, row.session_id);
      return null;
    }
    const session = await sessionById(ctx.db, row.session_id);
    if (!session || session.revoked_at !== null || row.expires_at <= now || session.expires_at <= now) return null;
    const user = await findUserById(ctx, session.user_id);
    if (!user) return null;
    // Before the token is used: refused now (require_verified_email), it works once the address is confirmed.
    await requireVerifiedEmail(ctx, user);
    await markRefreshTokenUsed(ctx.db, sha256(refreshToken), now);
    await forgetUsedRefreshTokens(ctx.db, session.id, USED_REFRESH_TOKENS_KEPT);
    await touchSession(ctx.db, session.id, now);
    const next = await issueRefreshToken(ctx, session.id, session.expires_at);
    return { user, sessionId: session.id, next };
  });
  if (!result) throw invalidRefresh();
  return sessionResponse(ctx, result.user, result.sessionId, result.next);
}

/** Revokes one session; returns true when it was active. */
export async function revokeSession(ctx: AppContext, sessionId: string): Promise<boolean> {
  return await revokeSessionRow(ctx.db, sessionId, ctx.clock.now());
}

/** Revokes every active session of a user; returns how many. */
export async function revokeUserSessions(ctx: AppContext, userId: string): Promise<number> {
  return await revokeUserSessionRows(ctx.db, userId, ctx.clock.now());
}

/** Revokes every active API key of a user; returns how many. */
export async function revokeUserApiKeys(ctx: AppContext, userId: string): Promise<number> {
  return await revokeUserApiKeyRows(ctx.db, userId, ctx.clock.now());
}

/**
 * The session's user's access columns (roles, metadata, address) when the session exists, is `userId`'s, is not
 * revoked and not expired; else null. Touches last_used_at at most once a minute.
 */
export async function activeSession(ctx: AppContext, sessionId: string, userId: string): Promise<UserAccessRow | null> {
  // What was committed before the request asked (a revocation, a change of roles included).
  const s = await keptCheck(ctx, `s\u0000${sessionId}`, () => sessionCheckRow(ctx.db, sessionId));
  const now = ctx.clock.now();
  if (!s || s.user_id !== userId || s.revoked_at !== null || s.expires_at <= now) return null;
  if (now - s.last_used_at > 60_000) {
    await touchSession(ctx.db, sessionId, now);
    s.last_used_at = now;
  }
  return s;
}

/** A user's active sessions, newest first. */
export async function listUserSessions(ctx: AppContext, userId: string) {
  return (await activeUserSessionRows(ctx.db, userId, ctx.clock.now()))
    .map((s) => ({ id: s.id, created_at: s.created_at, last_used_at: s.last_used_at, expires_at: s.expires_at, ip: s.ip, user_agent: s.user_agent }));
}
