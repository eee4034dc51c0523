import type { AppContext } from "../context.ts";
import { AppError, badRequest, bodyOf, notFound, type Checked } from "../errors.ts";
import { clearLoginAttempts } from "./lockout.ts";
import { checkPassword, emailKey, hashPassword, normalizeEmail } from "../users/passwords.ts";
import { signAccessToken, listUserSessions, revokeSession, revokeUserSessions } from "./sessions.ts";
import { listLinkedAccounts, type LinkedAccountJson } from "./oauth/matching.ts";
import { activeApiKeysOf, revokeApiKeyOf, type ApiKeyJson } from "./api-keys.ts";
import { removeTotp } from "./totp.ts";
import { lockedUntil } from "./lockout.ts";
import { checkMetadata, checkRoles, createUser, emailConflictOf, findUserByEmail, requireUser, userToJson, type UserJson } from "../users/users.ts";
import { useUserTokens } from "../tables/tokens.ts";
import { deleteUserRow, searchUserRows, updateUserColumns, type UserChanges } from "../tables/users.ts";

/** Lifetime of an admin impersonation token (CONTRACT §3). */
export const IMPERSONATION_TTL_SECONDS = 300;

/** What an admin may set on a user; email and password are judged by the user store (422). */
export interface AdminUserInput {
  email?: unknown;
  password?: unknown;
  roles?: unknown;
  metadata?: unknown;
  is_verified?: boolean;
}

/**
 * Lists users, newest first: `{ items, total }`; `search` matches part of the email, `limit` 1..500 (50),
 * `page` 1..1,000,000 (1), as the query string's schema checked them.
 */
export async function listUsers(ctx: AppContext, opts: { search?: string; limit?: number; page?: number } = {}): Promise<{ items: UserJson[]; total: number }> {
  const { limit = 50, page = 1 } = opts;
  const search = opts.search === undefined ? "" : emailKey(opts.search);
  if (search.length > 254) throw badRequest("search is too long");
  // LIKE wildcards in the search text are escaped: the text is matched literally.
  const pattern = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const { total, rows } = await searchUserRows(ctx.db, pattern, limit, (page - 1) * limit);
  return { items: rows.map(userToJson), total };
}

/** Creates a user as an admin: `{ email, password?, roles?, metadata?, is_verified? }`. Sends no mail. */
export async function adminCreateUser(ctx: AppContext, b: AdminUserInput): Promise<UserJson> {
  const user = await createUser(ctx, { email: b.email, password: b.password, roles: b.roles, metadata: b.metadata, isVerified: b.is_verified });
  return userToJson(user);
}

/** One user by id or email; 404 when none. */
export async function getUser(ctx: AppContext, idOrEmail: string): Promise<UserJson> {
  return userToJson(await requireUser(ctx, idOrEmail));
}

/**
 * Changes a user as an admin: `roles`, `metadata` (replaced whole), `is_verified`, `email`, `password`,
 * and `totp_enabled: false` (the same as reset-2fa).
 * New roles apply at the user's next request; the access token shows them from the next login or refresh.
 */
export async function adminUpdateUser(ctx: AppContext, idOrEmail: string, input: Checked<AdminUserInput & { totp_enabled?: false }>): Promise<UserJson> {
  const user = await requireUser(ctx, idOrEmail);
  // An admin may only turn 2FA off (a user who lost their authenticator): the schema allows `false` only.
  const b = bodyOf(input);
  const changes: UserChanges = {};
  if (b.roles !== undefined) changes.roles = JSON.stringify(checkRoles(b.roles));
  if (b.metadata !== undefined) changes.metadata = JSON.stringify(checkMetadata(b.metadata));
  if (b.is_verified !== undefined) changes.is_verified = b.is_verified ? 1 : 0;
  if (b.email !== undefined) {
    const email = normalizeEmail(b.email);
    const other = await findUserByEmail(ctx, email);
    if (other && other.id !== user.id) throw new AppError(409, "conflict", "a user with this email already exists");
    changes.email = email;
  }
  if (b.password !== undefined) changes.password_hash = await hashPassword(checkPassword(b.password), null);
  if (Object.keys(changes).length) {
    const emailChanged = changes.email !== undefined && changes.email !== user.email;
    try {
      await ctx.db.transaction(async () => {
        await updateUserColumns(ctx.db, user.id, changes, ctx.clock.now());
        // Links mailed to the old address must not verify, sign in or reset the account under the new one.
        if (emailChanged) await useUserTokens(ctx.db, user.id, ["verify_email", "magic_link", "reset_password"], ctx.clock.now());
      });
    } catch (err) {
      throw emailConflictOf(err);
    }
  }
  if (b.totp_enabled === false) await removeTotp(ctx, user.id);
  return getUser(ctx, user.id);
}

/** Deletes a user with their sessions, keys, tokens and linked accounts. Their records keep `_owner_id`. */
export async function deleteUser(ctx: AppContext, idOrEmail: string): Promise<{ ok: true; id: string }> {
  const user = await requireUser(ctx, idOrEmail);
  await deleteUserRow(ctx.db, user.id);
  return { ok: true, id: user.id };
}

/** Clears a lockout (and the count of failed logins). */
export async function unlockUser(ctx: AppContext, idOrEmail: string): Promise<UserJson> {
  const user = await requireUser(ctx, idOrEmail);
  await clearLoginAttempts(ctx, user.email);
  return getUser(ctx, user.id);
}

/** A user's active sessions: `{ items: [{ id, created_at, last_used_at, expires_at, ip, user_agent }] }`. */
export async function listSessionsOfUser(ctx: AppContext, idOrEmail: string) {
  const user = await requireUser(ctx, idOrEmail);
  return { items: await listUserSessions(ctx, user.id) };
}

/** Revokes one session: the next request with its `sid` gets 401. 404 when no active session has that id. */
export async function adminRevokeSession(ctx: AppContext, sessionId: string): Promise<{ ok: true; id: string }> {
  if (!await revokeSession(ctx, sessionId)) throw notFound("session not found");
  return { ok: true, id: sessionId };
}

/** Revokes every session of a user. */
export async function revokeSessionsOfUser(ctx: AppContext, idOrEmail: string): Promise<{ ok: true; sessions_revoked: number }> {
  const user = await requireUser(ctx, idOrEmail);
  return { ok: true, sessions_revoked: await revokeUserSessions(ctx, user.id) };
}

/** A 300-second access token acting as the user, with no `sid` and no refresh token. */
export async function impersonateUser(ctx: AppContext, idOrEmail: string): Promise<{ access_token: string; expires_in: number }> {
  const user = await requireUser(ctx, idOrEmail);
  const { token } = await signAccessToken(ctx, user, null, IMPERSONATION_TTL_SECONDS);
  return { access_token: token, expires_in: IMPERSONATION_TTL_SECONDS };
}

/** What an admin sees of a user's sign-in state (`GET /admin/users/:id/security`). */
export interface UserSecurityJson {
  id: string;
  email: string;
  totp_enabled: boolean;
  /** Unix ms until which logins are refused, or null when not locked (an expired lock reads null). */
  locked_until: number | null;
  oauth_accounts: LinkedAccountJson[];
  api_keys: ApiKeyJson[];
}

/** A user's 2FA state, lockout, linked OAuth accounts and active API keys. */
export async function getUserSecurity(ctx: AppContext, idOrEmail: string): Promise<UserSecurityJson> {
  const user = await requireUser(ctx, idOrEmail);
  return {
    id: user.id,
    email: user.email,
    totp_enabled: !!user.totp_enabled,
    locked_until: await lockedUntil(ctx, user.email),
    oauth_accounts: (await listLinkedAccounts(ctx, user.id)).accounts,
    api_keys: await activeApiKeysOf(ctx, user.id),
  };
}

/**
 * Turns a user's 2FA off for a user who lost their authenticator: the secret and recovery codes
 * are dropped, and pending second login steps die. Sessions stay. A no-op when 2FA is off.
 */
export async function resetUserTotp(ctx: AppContext, idOrEmail: string): Promise<UserSecurityJson> {
  const user = await requireUser(ctx, idOrEmail);
  await removeTotp(ctx, user.id);
  return getUserSecurity(ctx, user.id);
}

/** A user's active API keys: `{ items: [{ id, name, created_at, last_used_at }] }`. */
export async function listApiKeysOfUser(ctx: AppContext, idOrEmail: string): Promise<{ items: ApiKeyJson[] }> {
  return { items: await activeApiKeysOf(ctx, (await requireUser(ctx, idOrEmail)).id) };
}

/** Revokes one API key of a user; 404 when the user has no active key of that id. */
export async function adminRevokeApiKey(ctx: AppContext, idOrEmail: string, keyId: string): Promise<{ ok: true; id: string }> {
  await revokeApiKeyOf(ctx, (await requireUser(ctx, idOrEmail)).id, keyId);
  return { ok: true, id: keyId };
}
