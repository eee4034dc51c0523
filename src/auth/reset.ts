import type { AppContext } from "../context.ts";
import { AppError, bodyOf, methodDisabled, type Checked } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import { consumeMailToken } from "./mail-tokens.ts";
import { checkPassword, hashPassword, hashTurnOf } from "../users/passwords.ts";
import { clearLoginAttempts } from "./lockout.ts";
import { revokeUserApiKeys, revokeUserSessions, type ClientInfo } from "./sessions.ts";
import { removeTotp } from "./totp.ts";
import { mailLinkIfAccount } from "./verification.ts";
import { useUserTokens } from "../tables/tokens.ts";
import { setUserPassword } from "../tables/users.ts";

export const RESET_TTL_MS = 60 * 60 * 1000;

/** `POST /auth/forgot-password {email}`: always `{ ok: true }`; mails a 1-hour reset link only when the account exists. */
export async function forgotPassword(ctx: AppContext, input: Checked<{ email: unknown }>): Promise<{ ok: true }> {
  if (!await getSetting(ctx, "auth_password_enabled")) throw methodDisabled("password login");
  return mailLinkIfAccount(ctx, input, "reset_password", RESET_TTL_MS);
}

/**
 * `POST /auth/reset-password {token, password}`: sets the new password, clears the lockout,
 * and revokes every session and API key (whoever knew the old password loses access), and every
 * pending 2FA login step, which the old password opened.
 */
export async function resetPassword(
  ctx: AppContext,
  input: Checked<{ token: unknown; password: unknown }>,
  client: ClientInfo,
): Promise<{ ok: true; sessions_revoked: number; api_keys_revoked: number }> {
  if (!await getSetting(ctx, "auth_password_enabled")) throw methodDisabled("password login");
  const b = bodyOf(input);
  // The password is checked before the token is used up, so a too-short password does not burn the link.
  const hash = await hashPassword(checkPassword(b.password), hashTurnOf(client));
  const userId = await consumeMailToken(ctx, b.token, "reset_password");
  if (!userId) throw new AppError(400, "invalid_token", "invalid or expired reset token");
  const now = ctx.clock.now();
  return await ctx.db.transaction(async () => {
    const user = await setUserPassword(ctx.db, userId, hash, now);
    if (!user) throw new AppError(400, "invalid_token", "invalid or expired reset token");
    await clearLoginAttempts(ctx, user.email);
    // IMPORTANT: on a never-verified account the 2FA may have been set up by whoever registered the
    // address in advance; a reset proves the address, so that second factor must not survive it.
    if (!user.is_verified) await removeTotp(ctx, userId);
    await useUserTokens(ctx.db, userId, ["reset_password", "totp_login"], now);
    return { ok: true as const, sessions_revoked: await revokeUserSessions(ctx, userId), api_keys_revoked: await revokeUserApiKeys(ctx, userId) };
  });
}
