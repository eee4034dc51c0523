import type { AppContext } from "../context.ts";
import { AppError, bodyOf, conflict, type Checked } from "../errors.ts";
import { renderMail, type MailKind } from "../mail/templates.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserByEmail, findUserById, userToJson, type UserJson, type UserRow } from "../users/users.ts";
import { checkMailLimit } from "./mail-limit.ts";
import { consumeMailToken, issueMailToken } from "./mail-tokens.ts";
import { normalizeEmail } from "../users/passwords.ts";
import type { Principal } from "../principal.ts";
import { revokeUserApiKeys, revokeUserSessions } from "./sessions.ts";
import { removeTotp } from "./totp.ts";
import { claimUnverifiedUser, markUserVerified } from "../tables/users.ts";

export const VERIFY_EMAIL_TTL_MS = 24 * 60 * 60 * 1000;

/** Where each mail link points, under APP_URL (the server serves a page there when APP_URL is itself). */
export const LINK_PATHS: Record<MailKind, string> = {
  verify_email: "/auth/verify-email",
  magic_link: "/auth/magic-link",
  reset_password: "/auth/reset-password",
};

/**
 * Issues a single-use token of `kind` for the user and mails its link (`{APP_URL}/auth/...?token=`). Never
 * throws on delivery. The verification mail says when the account was registered (CONTRACT §8c).
 */
export async function sendTokenMail(ctx: AppContext, user: UserRow, kind: MailKind, ttlMs: number): Promise<void> {
  const token = await issueMailToken(ctx, user.id, kind, ttlMs);
  const link = `${ctx.config.appUrl}${LINK_PATHS[kind]}?token=${encodeURIComponent(token)}`;
  const registeredAt = kind === "verify_email" ? user.created_at : undefined;
  ctx.mailer.send(renderMail(kind, { to: user.email, appName: await getSetting(ctx, "app_name"), link, registeredAt }));
}

/**
 * The body of a mail request (`{ email }`): counts it toward the address's mail limit, then mails
 * a link only when an account exists. The caller answers `{ ok: true }` either way, so nothing is revealed.
 */
export async function mailLinkIfAccount(ctx: AppContext, input: Checked<{ email: unknown }>, kind: MailKind, ttlMs: number): Promise<{ ok: true }> {
  const email = normalizeEmail(bodyOf(input).email);
  await checkMailLimit(ctx, email);
  const user = await findUserByEmail(ctx, email);
  if (user) await sendTokenMail(ctx, user, kind, ttlMs);
  return { ok: true };
}

/** Sends the verify-email mail with a 24 h single-use link. Never throws. */
export async function sendVerificationEmail(ctx: AppContext, user: UserRow): Promise<void> {
  await sendTokenMail(ctx, user, "verify_email", VERIFY_EMAIL_TTL_MS);
}

/**
 * `POST /auth/verify-email`: marks the token's user verified; 400 `invalid_token` for an unknown, used or
 * expired token. It confirms the registration as it is (CONTRACT §8c): password, sessions and API keys
 * stay, since a legitimate user keeps what they chose; the mail tells anyone who did not register to ignore it.
 */
export async function verifyEmail(ctx: AppContext, token: unknown): Promise<{ ok: true; user: UserJson }> {
  const userId = await consumeMailToken(ctx, token, "verify_email");
  if (!userId) throw new AppError(400, "invalid_token", "invalid or expired verification token");
  await markUserVerified(ctx.db, userId, ctx.clock.now());
  const user = await findUserById(ctx, userId);
  if (!user) throw new AppError(400, "invalid_token", "invalid or expired verification token");
  return { ok: true, user: userToJson(user) };
}

/** `POST /auth/resend-verification`: 409 when already verified; counts toward the mail limit of the address. */
export async function resendVerification(ctx: AppContext, p: Principal): Promise<{ ok: true }> {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  const user = await findUserById(ctx, p.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  if (user.is_verified) throw conflict("the email address is already verified");
  await checkMailLimit(ctx, user.email);
  await sendVerificationEmail(ctx, user);
  return { ok: true };
}

/**
 * The first proof of an address (a magic link, or OAuth with a provider-verified email) on an
 * account whose email was never verified. IMPORTANT: such an account may have been registered in
 * advance by someone else (a pre-registration takeover), so everything that person could have set
 * up is dropped: password, sessions, API keys, TOTP secret and recovery codes. Only the owner of
 * the address keeps access. Marks the account verified. A verified account is left alone.
 */
export async function claimUnverifiedAccount(ctx: AppContext, userId: string): Promise<void> {
  await ctx.db.transaction(async () => {
    if (!await claimUnverifiedUser(ctx.db, userId, ctx.clock.now())) return;
    await removeTotp(ctx, userId);
    await revokeUserSessions(ctx, userId);
    await revokeUserApiKeys(ctx, userId);
  });
}
