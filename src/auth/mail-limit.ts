import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";
import { mailTimes, noteMailSent, pruneMailLog } from "../tables/mail-log.ts";

/** At most this many mails per address per window (SPEC §8). */
export const MAIL_LIMIT = 5;
export const MAIL_WINDOW_MS = 60 * 60 * 1000;

/**
 * Counts one mail request for an address, or throws 429 `rate_limited` with Retry-After.
 * Counted per address whether or not an account exists, so a 429 reveals nothing; kept in
 * `_mail_log` so the limit survives a restart and holds across processes.
 */
export async function checkMailLimit(ctx: AppContext, email: string): Promise<void> {
  const now = ctx.clock.now();
  const since = now - MAIL_WINDOW_MS;
  const retryAfter = await ctx.db.transaction(async () => {
      // Rows older than the window are dropped on every call, so the table holds one hour of mail at most.
      await pruneMailLog(ctx.db, since);
      const rows = await mailTimes(ctx.db, email, since);
      if (rows.length >= MAIL_LIMIT) {
        const freeAt = rows[rows.length - MAIL_LIMIT].sent_at + MAIL_WINDOW_MS;
        return Math.max(1, Math.ceil((freeAt - now) / 1000));
      }
      await noteMailSent(ctx.db, email, now);
      return 0;
    });
  if (retryAfter > 0)
    throw new AppError(429, "rate_limited", `too many mails to this address; try again in ${retryAfter} seconds`, {}, { "Retry-After": String(retryAfter) });
}
