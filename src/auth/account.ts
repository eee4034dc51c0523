import type { AppContext } from "../context.ts";
import { AppError, ValidationError, badRequest, type FieldError } from "../errors.ts";
import { getSettings } from "../settings/settings.ts";
import { checkMetadata, createUser, findUserByEmail, findUserById, userToJson, type UserJson, type UserRow } from "../users/users.ts";
import { checkPassword, normalizeEmail, verifyPassword } from "./passwords.ts";
import type { Principal } from "./principal.ts";
import { createSession, revokeSession, revokeUserApiKeys, revokeUserSessions, type ClientInfo, type SessionResponse } from "./sessions.ts";
import { sendVerificationEmail } from "./verification.ts";

export const methodDisabled = (what: string) => new AppError(403, "method_disabled", `${what} is disabled on this server`);
const invalidCredentials = () => new AppError(401, "invalid_credentials", "invalid email or password");

function body(input: unknown): Record<string, unknown> {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("the request body must be a JSON object");
  return input as Record<string, unknown>;
}

/** `POST /auth/register`: creates the user, sends the verification mail, starts a session. */
export async function register(ctx: AppContext, input: unknown, client: ClientInfo): Promise<SessionResponse> {
  const b = body(input);
  const s = getSettings(ctx);
  if (!s.auth_password_enabled) throw methodDisabled("password registration");
  if (!s.registration_open) throw new AppError(403, "registration_closed", "registration is closed");
  // Registration always needs a password (createUser alone allows none, for admin-made accounts).
  const errors: FieldError[] = [];
  for (const check of [() => normalizeEmail(b.email), () => checkPassword(b.password)]) {
    try {
      check();
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      errors.push(...err.errors);
    }
  }
  if (errors.length) throw new ValidationError(errors);
  const user = await createUser(ctx, { email: b.email, password: b.password });
  sendVerificationEmail(ctx, user);
  return createSession(ctx, user, client);
}

/** What a password login answers: a session, or the second step when 2FA is on. */
export type LoginResult = SessionResponse | { totp_required: true; totp_token: string };

/** A step a 2FA-enabled user must take after the password (set by the TOTP module). */
export type SecondFactor = (ctx: AppContext, user: UserRow) => LoginResult | null;

/**
 * `POST /auth/login`. Unknown email and wrong password give the same 401 in the same time.
 * A locked account gets 429 with Retry-After even with the right password.
 */
export async function login(ctx: AppContext, input: unknown, client: ClientInfo, secondFactor?: SecondFactor): Promise<LoginResult> {
  const b = body(input);
  if (!getSettings(ctx).auth_password_enabled) throw methodDisabled("password login");
  if (typeof b.email !== "string" || typeof b.password !== "string") {
    await verifyPassword(String(b.password ?? ""), null);
    throw invalidCredentials();
  }
  let email: string;
  try {
    email = normalizeEmail(b.email);
  } catch {
    await verifyPassword(b.password, null);
    throw invalidCredentials();
  }
  const user = findUserByEmail(ctx, email);
  if (user) assertNotLocked(ctx, user);
  const ok = await verifyPassword(b.password, user?.password_hash);
  if (!user || !ok) {
    if (user) recordFailedLogin(ctx, user.id);
    throw invalidCredentials();
  }
  const fresh = findUserById(ctx, user.id)!;
  assertNotLocked(ctx, fresh);
  // With 2FA the count is reset only when the second step succeeds: else a caller who knows the
  // password could try codes forever by logging in again after every few wrong ones.
  const second = secondFactor?.(ctx, fresh);
  if (second) return second;
  resetFailedLogins(ctx, user.id);
  return createSession(ctx, fresh, client);
}

/** Clears the count of failed logins and any lockout. */
export function resetFailedLogins(ctx: AppContext, userId: string): void {
  ctx.sqlite.query("UPDATE _users SET failed_logins = 0, locked_until = NULL WHERE id = ?").run(userId);
}

/** 429 `account_locked` with Retry-After while a lockout runs. */
export function assertNotLocked(ctx: AppContext, user: UserRow): void {
  const now = ctx.clock.now();
  if (user.locked_until && user.locked_until > now) {
    const retry = Math.max(1, Math.ceil((user.locked_until - now) / 1000));
    throw new AppError(429, "account_locked", "too many failed logins; the account is locked for now", {}, { "Retry-After": String(retry) });
  }
}

/** Counts a failed login; the LOCKOUT_MAX_ATTEMPTS-th locks the account for LOCKOUT_DURATION_MS. */
export function recordFailedLogin(ctx: AppContext, userId: string): void {
  const now = ctx.clock.now();
  const { lockoutMaxAttempts, lockoutDurationMs } = ctx.config;
  ctx.sqlite.transaction(() => {
    const u = ctx.sqlite
      .query<{ failed_logins: number; locked_until: number | null }, [string]>("SELECT failed_logins, locked_until FROM _users WHERE id = ?")
      .get(userId);
    if (!u) return;
    const count = (u.locked_until && u.locked_until <= now ? 0 : u.failed_logins) + 1;
    if (count >= lockoutMaxAttempts) {
      ctx.sqlite.query("UPDATE _users SET failed_logins = 0, locked_until = ? WHERE id = ?").run(now + lockoutDurationMs, userId);
    } else {
      ctx.sqlite.query("UPDATE _users SET failed_logins = ?, locked_until = NULL WHERE id = ?").run(count, userId);
    }
  })();
}

function requireUserPrincipal(p: Principal): Extract<Principal, { kind: "user" }> {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  return p;
}

/** `POST /auth/logout`: revokes the current session. */
export function logout(ctx: AppContext, p: Principal): { ok: true } {
  const u = requireUserPrincipal(p);
  if (u.sessionId) revokeSession(ctx, u.sessionId);
  return { ok: true };
}

/** `POST /auth/logout-all`: revokes every session and API key of the user. */
export function logoutAll(ctx: AppContext, p: Principal): { ok: true; sessions_revoked: number; api_keys_revoked: number } {
  const u = requireUserPrincipal(p);
  return ctx.sqlite.transaction(() => ({
    ok: true as const,
    sessions_revoked: revokeUserSessions(ctx, u.userId),
    api_keys_revoked: revokeUserApiKeys(ctx, u.userId),
  }))();
}

/** `GET /auth/me`. */
export function me(ctx: AppContext, p: Principal): UserJson {
  const u = requireUserPrincipal(p);
  const user = findUserById(ctx, u.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  return userToJson(user);
}

/** `PATCH /auth/me`: only `metadata`, replaced whole. */
export function updateMe(ctx: AppContext, p: Principal, input: unknown): UserJson {
  const u = requireUserPrincipal(p);
  const b = body(input);
  for (const k of Object.keys(b)) if (k !== "metadata") throw badRequest(`"${k}" cannot be changed here; only metadata`);
  if (!("metadata" in b)) throw badRequest("metadata is required");
  const metadata = checkMetadata(b.metadata);
  ctx.sqlite.query("UPDATE _users SET metadata = ?, updated_at = ? WHERE id = ?").run(JSON.stringify(metadata), ctx.clock.now(), u.userId);
  return me(ctx, p);
}
