import type { AppContext } from "../context.ts";
import { AppError, bodyOf, methodDisabled, type Checked } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserById } from "../users/users.ts";
import { consumeMailToken } from "./mail-tokens.ts";
import type { ClientInfo } from "./sessions.ts";
import { finishLogin, type LoginResult } from "./totp.ts";
import { claimUnverifiedAccount, mailLinkIfAccount } from "./verification.ts";

export const MAGIC_LINK_TTL_MS = 30 * 60 * 1000;

/** `POST /auth/magic-link {email}`: always `{ ok: true }`; mails a 30-minute link only when the account exists. */
export async function requestMagicLink(ctx: AppContext, input: Checked<{ email: unknown }>): Promise<{ ok: true }> {
  if (!await getSetting(ctx, "auth_magic_link_enabled")) throw methodDisabled("magic-link login");
  return mailLinkIfAccount(ctx, input, "magic_link", MAGIC_LINK_TTL_MS);
}

/**
 * `POST /auth/magic-link/verify {token}`: proves the address (on a never-verified account this drops
 * what a pre-registration could have set up), then a session or the 2FA step; 401 for a bad token.
 */
export async function verifyMagicLink(ctx: AppContext, input: Checked<{ token: unknown }>, client: ClientInfo): Promise<LoginResult> {
  if (!await getSetting(ctx, "auth_magic_link_enabled")) throw methodDisabled("magic-link login");
  const userId = await consumeMailToken(ctx, bodyOf(input).token, "magic_link");
  if (!userId) throw new AppError(401, "invalid_token", "invalid or expired magic-link token");
  await claimUnverifiedAccount(ctx, userId);
  const user = await findUserById(ctx, userId);
  if (!user) throw new AppError(401, "invalid_token", "invalid or expired magic-link token");
  return finishLogin(ctx, user, client);
}
