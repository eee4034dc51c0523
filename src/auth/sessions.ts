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
  type SessionCheckRow,
} from "../tables/sessions.ts";
import { usersAccessVersion, type UserAccessRow } from "../tables/users.ts";
import { sharedRead } from "../db/shared-read.ts";
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
  const s = await sessionCheck(ctx, sessionId);
  const now = ctx.clock.now();
  if (!s || s.user_id !== userId || s.revoked_at !== null || s.expires_at <= now) return null;
  if (now - s.last_used_at > 60_000) {
    await touchSession(ctx.db, sessionId, now);
    s.last_used_at = now;
  }
  return s;
}

/** Session checks kept while the users' access version stands (see sessionCheck), per database. */
interface SessionChecks {
  /** The version the rows were read under (after it was read); "" before the first. */
  version: string;
  rows: Map<string, SessionCheckRow>;
  /** The version as committed when asked, one read shared by the requests asking together. */
  versionNow: () => Promise<string>;
}
const checksOf = new WeakMap<AppContext["db"], SessionChecks>();
/** Sessions kept at most: past that the cache starts again empty. */
const MAX_KEPT_SESSIONS = 10_000;

/** Whether version `a` came after `b` (both decimal numbers; "" before any). */
const later = (a: string, b: string) => a.length !== b.length ? a.length > b.length : a > b;

/**
 * The session `id` with its user's access as committed when the caller asked. SECURITY: a row is kept only while
 * the users' access version stands: a trigger moves it with every revocation or deletion of a session and every
 * change of a user's access or deletion of a user, by any process (migrations 0012 and 0015). Each request reads
 * the version anew (a read begun after it asked, shared by the requests that ask together), so a revocation
 * holds from the first request after its commit; what costs is the row, read once per session and version
 * instead of once per request (on PostgreSQL most of a create's database time).
 */
async function sessionCheck(ctx: AppContext, id: string): Promise<SessionCheckRow | null> {
  // Inside a write transaction its own view counts (what it changed and has not committed): read as it is.
  if (ctx.db.inTransaction()) return await sessionCheckRow(ctx.db, id);
  let checks = checksOf.get(ctx.db);
  if (!checks) {
    const db = ctx.db;
    checksOf.set(db, (checks = { version: "", rows: new Map(), versionNow: sharedRead(() => usersAccessVersion(db)) }));
  }
  const version = await checks.versionNow();
  if (later(version, checks.version)) {
    checks.rows.clear();
    checks.version = version;
  }
  // Kept rows were read after a version at least as late as this request's.
  const kept = checks.rows.get(id);
  if (kept) return kept;
  // IMPORTANT: the row after the version it is kept under; kept only while no later version was seen meanwhile.
  const row = await sessionCheckRow(ctx.db, id);
  if (row && checks.version === version) {
    if (checks.rows.size >= MAX_KEPT_SESSIONS) checks.rows.clear();
    checks.rows.set(id, row);
  }
  return row;
}

/** A user's active sessions, newest first. */
export async function listUserSessions(ctx: AppContext, userId: string) {
  return (await activeUserSessionRows(ctx.db, userId, ctx.clock.now()))
    .map((s) => ({ id: s.id, created_at: s.created_at, last_used_at: s.last_used_at, expires_at: s.expires_at, ip: s.ip, user_agent: s.user_agent }));
}
