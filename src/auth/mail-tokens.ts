import type { AppContext } from "../context.ts";
import { randomToken, sha256 } from "../crypto.ts";

/** Kinds of single-use tokens kept hashed in `_tokens` (mail links and the second login step). */
export type MailTokenKind = "magic_link" | "verify_email" | "reset_password" | "totp_login";

/** Issues a single-use token (32 random bytes) for a user; only its hash is stored. */
export async function issueMailToken(ctx: AppContext, userId: string, kind: MailTokenKind, ttlMs: number): Promise<string> {
  const token = randomToken(32);
  const now = ctx.clock.now();
  await ctx.db.run("INSERT INTO _tokens (hash, kind, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", [sha256(token), kind, userId, now, now + ttlMs]);
  return token;
}

/** Uses up a token of the given kind; returns its user id, or null when unknown, used, expired or of another kind. */
export async function consumeMailToken(ctx: AppContext, token: unknown, kind: MailTokenKind): Promise<string | null> {
  if (typeof token !== "string" || !token || token.length > 256) return null;
  const now = ctx.clock.now();
  const row = await ctx.db.get<{ user_id: string }>("UPDATE _tokens SET used_at = ? WHERE hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id", [now, sha256(token), kind, now]);
  return row ? row.user_id : null;
}
