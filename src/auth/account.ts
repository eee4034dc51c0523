import type { AppContext } from "../context.ts";
import { AppError, ValidationError, bodyOf, methodDisabled, type Checked, type FieldError } from "../errors.ts";
import { getSettings } from "../settings/settings.ts";
import { checkMetadata, createUser, findUserByEmail, findUserById, userToJson, type UserJson } from "../users/users.ts";
import { releaseLoginAttempt, takeLoginAttempt } from "./lockout.ts";
import { checkPassword, hashTurnOf, normalizeEmail, verifyPassword } from "../users/passwords.ts";
import type { Principal } from "../principal.ts";
import { createSession, revokeSession, revokeUserApiKeys, revokeUserSessions, type ClientInfo, type SessionResponse } from "./sessions.ts";
import { finishLogin, type LoginResult } from "./totp.ts";
import { sendVerificationEmail } from "./verification.ts";
import { requireVerifiedEmail } from "./verified.ts";
import { setUserMetadata } from "../tables/users.ts";

const invalidCredentials = () => new AppError(401, "invalid_credentials", "invalid email or password");

/** `POST /auth/register`: creates the user, sends the verification mail, starts a session. */
export async function register(ctx: AppContext, b: Record<string, unknown>, client: ClientInfo): Promise<SessionResponse> {
  const s = await getSettings(ctx);
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
  const user = await createUser(ctx, { email: b.email, password: b.password, hashFor: hashTurnOf(client) });
  await sendVerificationEmail(ctx, user);
  return createSession(ctx, user, client);
}

/**
 * `POST /auth/login`. Unknown email and wrong password give the same 401 in the same time.
 * A locked account gets 429 with Retry-After even with the right password. The second factor
 * is part of the flow (`finishLogin`), so no caller can hand out a session without it.
 */
export async function login(ctx: AppContext, b: Record<string, unknown>, client: ClientInfo): Promise<LoginResult> {
  if (!(await getSettings(ctx)).auth_password_enabled) throw methodDisabled("password login");
  const by = hashTurnOf(client);
  if (typeof b.email !== "string" || typeof b.password !== "string") {
    await verifyPassword(String(b.password ?? ""), null, by);
    throw invalidCredentials();
  }
  let email: string;
  try {
    email = normalizeEmail(b.email);
  } catch {
    await verifyPassword(b.password, null, by);
    throw invalidCredentials();
  }
  // IMPORTANT: the guess is counted before the slow hash, in one statement, else parallel
  // requests all pass the lock check before any failure is recorded (a lockout bypass).
  await takeLoginAttempt(ctx, email);
  const user = await findUserByEmail(ctx, email);
  const ok = await verifyPassword(b.password, user?.password_hash, by).catch(async (err) => {
    // No turn to hash in (429): nothing was tried, so the guess is given back.
    await releaseLoginAttempt(ctx, email);
    throw err;
  });
  // The row is read again: a password reset or 2FA change may have landed during the hash. And once more in
  // the transaction that makes the session (or the 2FA token): one that lands after this read must not leave
  // a session made with the old password behind (a reset revokes only the sessions it finds).
  const fresh = user && ok ? await findUserById(ctx, user.id) : null;
  if (!fresh || fresh.password_hash !== user?.password_hash) throw invalidCredentials();
  // A right password of a never-verified account with require_verified_email on: no session and no 2FA
  // step (a pre-registration must hold nothing). A right password is no failure: its slot is given back.
  if (!fresh.is_verified) {
    try {
      await requireVerifiedEmail(ctx, fresh);
    } catch (err) {
      await releaseLoginAttempt(ctx, email);
      throw err;
    }
  }
  const sameUser = async () => {
    const current = await findUserById(ctx, fresh.id);
    if (!current || current.password_hash !== fresh.password_hash || current.totp_enabled !== fresh.totp_enabled) throw invalidCredentials();
  };
  const result = await finishLogin(ctx, fresh, client, sameUser);
  // A right password is no failure: with 2FA on its slot is given back, and each code takes its own.
  if ("totp_required" in result) await releaseLoginAttempt(ctx, email);
  return result;
}

function requireUserPrincipal(p: Principal): Extract<Principal, { kind: "user" }> {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  return p;
}

/** `POST /auth/logout`: revokes the current session. */
export async function logout(ctx: AppContext, p: Principal): Promise<{ ok: true }> {
  const u = requireUserPrincipal(p);
  if (u.sessionId) await revokeSession(ctx, u.sessionId);
  return { ok: true };
}

/** `POST /auth/logout-all`: revokes every session and API key of the user. */
export async function logoutAll(ctx: AppContext, p: Principal): Promise<{ ok: true; sessions_revoked: number; api_keys_revoked: number }> {
  const u = requireUserPrincipal(p);
  return await ctx.db.transaction(async () => ({
    ok: true as const,
    sessions_revoked: await revokeUserSessions(ctx, u.userId),
    api_keys_revoked: await revokeUserApiKeys(ctx, u.userId),
  }));
}

/** `GET /auth/me`. */
export async function me(ctx: AppContext, p: Principal): Promise<UserJson> {
  const u = requireUserPrincipal(p);
  const user = await findUserById(ctx, u.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  return userToJson(user);
}

/** `PATCH /auth/me { metadata }` (no other key): the metadata, replaced whole. */
export async function updateMe(ctx: AppContext, p: Principal, input: Checked<{ metadata: unknown }>): Promise<UserJson> {
  const u = requireUserPrincipal(p);
  const metadata = checkMetadata(bodyOf(input).metadata);
  await setUserMetadata(ctx.db, u.userId, JSON.stringify(metadata), ctx.clock.now());
  return me(ctx, p);
}
