import type { AppContext } from "../context.ts";
import { AppError, asObject, conflict } from "../errors.ts";
import { renderMail, type MailKind } from "../mail/templates.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserByEmail, findUserById, userToJson, type UserJson, type UserRow } from "../users/users.ts";
import { checkMailLimit } from "./mail-limit.ts";
import { consumeMailToken, issueMailToken } from "./mail-tokens.ts";
import { normalizeEmail } from "./passwords.ts";
import type { Principal } from "./principal.ts";
import { revokeUserApiKeys, revokeUserSessions } from "./sessions.ts";
import { removeTotp } from "./totp.ts";

export const VERIFY_EMAIL_TTL_MS = 24 * 60 * 60 * 1000;

const LINK_PATHS: Record<MailKind, string> = {
  verify_email: "/auth/verify-email",
  magic_link: "/auth/magic-link",
  reset_password: "/auth/reset-password",
};

/** Issues a single-use token of `kind` for the user and mails its link (`{APP_URL}/auth/...?token=`). Never throws on delivery. */
export function sendTokenMail(ctx: AppContext, user: UserRow, kind: MailKind, ttlMs: number): void {
  const token = issueMailToken(ctx, user.id, kind, ttlMs);
  const link = `${ctx.config.appUrl}${LINK_PATHS[kind]}?token=${encodeURIComponent(token)}`;
  ctx.mailer.send(renderMail(kind, { to: user.email, appName: getSetting(ctx, "app_name"), link }));
}

/**
 * The body of a mail request (`{ email }`): counts it toward the address's mail limit, then mails
 * a link only when an account exists. The caller answers `{ ok: true }` either way, so nothing is revealed.
 */
export function mailLinkIfAccount(ctx: AppContext, input: unknown, kind: MailKind, ttlMs: number): { ok: true } {
  const email = normalizeEmail(asObject(input).email);
  checkMailLimit(ctx, email);
  const user = findUserByEmail(ctx, email);
  if (user) sendTokenMail(ctx, user, kind, ttlMs);
  return { ok: true };
}

/** Sends the verify-email mail with a 24 h single-use link. Never throws. */
export function sendVerificationEmail(ctx: AppContext, user: UserRow): void {
  sendTokenMail(ctx, user, "verify_email", VERIFY_EMAIL_TTL_MS);
}

/** `POST /auth/verify-email`: marks the token's user verified; 400 `invalid_token` for an unknown, used or expired token. */
export function verifyEmail(ctx: AppContext, token: unknown): { ok: true; user: UserJson } {
  const userId = consumeMailToken(ctx, token, "verify_email");
  if (!userId) throw new AppError(400, "invalid_token", "invalid or expired verification token");
  ctx.sqlite.query("UPDATE _users SET is_verified = 1, updated_at = ? WHERE id = ?").run(ctx.clock.now(), userId);
  const user = findUserById(ctx, userId);
  if (!user) throw new AppError(400, "invalid_token", "invalid or expired verification token");
  return { ok: true, user: userToJson(user) };
}

/** `POST /auth/resend-verification`: 409 when already verified; counts toward the mail limit of the address. */
export function resendVerification(ctx: AppContext, p: Principal): { ok: true } {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  const user = findUserById(ctx, p.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  if (user.is_verified) throw conflict("the email address is already verified");
  checkMailLimit(ctx, user.email);
  sendVerificationEmail(ctx, user);
  return { ok: true };
}

/**
 * The first proof of an address (a magic link, or OAuth with a provider-verified email) on an
 * account whose email was never verified. IMPORTANT: such an account may have been registered in
 * advance by someone else (a pre-registration takeover), so everything that person could have set
 * up is dropped: password, sessions, API keys, TOTP secret and recovery codes. Only the owner of
 * the address keeps access. Marks the account verified. A verified account is left alone.
 */
export function claimUnverifiedAccount(ctx: AppContext, userId: string): void {
  ctx.sqlite.transaction(() => {
    const claimed = ctx.sqlite
      .query("UPDATE _users SET is_verified = 1, password_hash = NULL, updated_at = ? WHERE id = ? AND is_verified = 0")
      .run(ctx.clock.now(), userId);
    if (claimed.changes === 0) return;
    removeTotp(ctx, userId);
    revokeUserSessions(ctx, userId);
    revokeUserApiKeys(ctx, userId);
  })();
}
