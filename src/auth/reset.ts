import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";
import { asObject } from "../records/codec.ts";
import { getSetting } from "../settings/settings.ts";
import { methodDisabled } from "./account.ts";
import { consumeMailToken } from "./mail-tokens.ts";
import { checkPassword, hashPassword } from "./passwords.ts";
import { revokeUserApiKeys, revokeUserSessions } from "./sessions.ts";
import { mailLinkIfAccount } from "./verification.ts";

export const RESET_TTL_MS = 60 * 60 * 1000;

/** `POST /auth/forgot-password {email}`: always `{ ok: true }`; mails a 1-hour reset link only when the account exists. */
export function forgotPassword(ctx: AppContext, input: unknown): { ok: true } {
  if (!getSetting(ctx, "auth_password_enabled")) throw methodDisabled("password login");
  return mailLinkIfAccount(ctx, input, "reset_password", RESET_TTL_MS);
}

/**
 * `POST /auth/reset-password {token, password}`: sets the new password, clears the lockout,
 * and revokes every session and API key (whoever knew the old password loses access), and every
 * pending 2FA login step, which the old password opened.
 */
export async function resetPassword(
  ctx: AppContext,
  input: unknown,
): Promise<{ ok: true; sessions_revoked: number; api_keys_revoked: number }> {
  if (!getSetting(ctx, "auth_password_enabled")) throw methodDisabled("password login");
  const b = asObject(input);
  // The password is checked before the token is used up, so a too-short password does not burn the link.
  const hash = await hashPassword(checkPassword(b.password));
  const userId = consumeMailToken(ctx, b.token, "reset_password");
  if (!userId) throw new AppError(400, "invalid_token", "invalid or expired reset token");
  const now = ctx.clock.now();
  return ctx.sqlite.transaction(() => {
    ctx.sqlite
      .query("UPDATE _users SET password_hash = ?, failed_logins = 0, locked_until = NULL, updated_at = ? WHERE id = ?")
      .run(hash, now, userId);
    ctx.sqlite.query("UPDATE _tokens SET used_at = ? WHERE user_id = ? AND kind IN ('reset_password', 'totp_login') AND used_at IS NULL").run(now, userId);
    return { ok: true as const, sessions_revoked: revokeUserSessions(ctx, userId), api_keys_revoked: revokeUserApiKeys(ctx, userId) };
  })();
}
