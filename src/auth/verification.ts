import type { AppContext } from "../context.ts";
import type { UserRow } from "../users/users.ts";
import { issueMailToken } from "./mail-tokens.ts";

export const VERIFY_EMAIL_TTL_MS = 24 * 60 * 60 * 1000;

/** Sends the verify-email mail with a 24 h single-use link. Never throws. */
export function sendVerificationEmail(ctx: AppContext, user: UserRow): void {
  const token = issueMailToken(ctx, user.id, "verify_email", VERIFY_EMAIL_TTL_MS);
  const link = `${ctx.config.appUrl}/auth/verify-email?token=${encodeURIComponent(token)}`;
  ctx.mailer.send({
    to: user.email,
    subject: "Verify your email address",
    text: `Confirm your email address by opening this link (valid for 24 hours):\n\n${link}\n`,
    link,
  });
}
