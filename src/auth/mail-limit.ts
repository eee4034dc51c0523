import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";

/** At most this many mails per address per window (SPEC §8). */
export const MAIL_LIMIT = 5;
export const MAIL_WINDOW_MS = 60 * 60 * 1000;

/**
 * Counts one mail request for an address, or throws 429 `rate_limited` with Retry-After.
 * Counted per address whether or not an account exists, so a 429 reveals nothing; kept in
 * `_mail_log` so the limit survives a restart and holds across processes.
 */
export function checkMailLimit(ctx: AppContext, email: string): void {
  const now = ctx.clock.now();
  const since = now - MAIL_WINDOW_MS;
  const retryAfter = ctx.sqlite
    .transaction(() => {
      // Rows older than the window are dropped on every call, so the table holds one hour of mail at most.
      ctx.sqlite.query("DELETE FROM _mail_log WHERE sent_at <= ?").run(since);
      const rows = ctx.sqlite
        .query<{ sent_at: number }, [string, number]>("SELECT sent_at FROM _mail_log WHERE email = ? AND sent_at > ? ORDER BY sent_at")
        .all(email, since);
      if (rows.length >= MAIL_LIMIT) {
        const freeAt = rows[rows.length - MAIL_LIMIT].sent_at + MAIL_WINDOW_MS;
        return Math.max(1, Math.ceil((freeAt - now) / 1000));
      }
      ctx.sqlite.query("INSERT INTO _mail_log (email, sent_at) VALUES (?, ?)").run(email, now);
      return 0;
    })
    .immediate();
  if (retryAfter > 0)
    throw new AppError(429, "rate_limited", `too many mails to this address; try again in ${retryAfter} seconds`, {}, { "Retry-After": String(retryAfter) });
}
