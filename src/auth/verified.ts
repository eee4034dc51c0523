import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";

/** 403 `email_not_verified` (CONTRACT §8c). */
export const emailNotVerified = () =>
  new AppError(403, "email_not_verified", "the email address of this account is not verified yet: confirm it with the link mailed to it");

/**
 * With the setting `require_verified_email` on, 403 `email_not_verified` for an account whose address was
 * never confirmed. IMPORTANT: anyone can register an address they do not own; with the setting on such a
 * pre-registration holds nothing lasting (no password login, refresh or API key) until the address's
 * owner confirms it. Called where a lasting credential is handed out or used; only an unverified
 * account pays for reading the setting.
 */
export async function requireVerifiedEmail(ctx: AppContext, user: { is_verified: number | boolean }): Promise<void> {
  if (user.is_verified) return;
  if (await getSetting(ctx, "require_verified_email")) throw emailNotVerified();
}
