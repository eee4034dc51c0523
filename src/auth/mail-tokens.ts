import type { AppContext } from "../context.ts";
import { randomToken, sha256 } from "../crypto.ts";
import { consumeToken, insertToken, type TokenKind } from "../tables/tokens.ts";

/** Kinds of single-use tokens kept hashed in `_tokens` (mail links and the second login step). */
export type MailTokenKind = TokenKind;

/** Issues a single-use token (32 random bytes) for a user; only its hash is stored. */
export async function issueMailToken(ctx: AppContext, userId: string, kind: MailTokenKind, ttlMs: number): Promise<string> {
  const token = randomToken(32);
  const now = ctx.clock.now();
  await insertToken(ctx.db, { hash: sha256(token), kind, userId, now, expiresAt: now + ttlMs });
  return token;
}

/** Uses up a token of the given kind; returns its user id, or null when unknown, used, expired or of another kind. */
export async function consumeMailToken(ctx: AppContext, token: unknown, kind: MailTokenKind): Promise<string | null> {
  if (typeof token !== "string" || !token || token.length > 256) return null;
  const now = ctx.clock.now();
  return await consumeToken(ctx.db, sha256(token), kind, now);
}
