import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";

/**
 * Waiting for a database that is not up yet: nodes started together with it (compose, systemd) come up before it
 * accepts connections, and a node that gave up at once would need a restart loop around it.
 */

/** The first pause between tries, doubled each time up to WAIT_RETRY_MAX_MS (a try on a database that is down costs a refused connection). */
export const WAIT_RETRY_MS = 100;
export const WAIT_RETRY_MAX_MS = 1_000;
/** How often a wait still under way is logged (every change of reason is logged at once). */
const WAIT_LOG_MS = 5_000;

/** The database could not be reached (the engine maps such failures to 503 `unavailable`). */
export function isUnreachable(err: unknown): boolean {
  return err instanceof AppError && err.status === 503 && err.code === "unavailable";
}

/**
 * Runs `open` until it succeeds, trying again while it fails because the database cannot be reached, for at most
 * `waitMs`, and logs why it waits (`url`'s password never appears). Any other failure, or the last one, is thrown.
 */
export async function untilReachable<T>(open: () => Promise<T>, opts: { waitMs: number; log: Logger; url?: string }): Promise<T> {
  const deadline = Date.now() + opts.waitMs;
  let lastSaid = "";
  let saidAt = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      const opened = await open();
      if (attempt > 0) opts.log.info("the database answers: starting");
      return opened;
    } catch (err) {
      const left = deadline - Date.now();
      if (!isUnreachable(err) || left <= 0) throw err;
      const why = reasonOf(err, opts.url);
      if (why !== lastSaid || Date.now() - saidAt >= WAIT_LOG_MS) {
        opts.log.warn("waiting for the database", { reason: why, left_s: Math.ceil(left / 1000) });
        lastSaid = why;
        saidAt = Date.now();
      }
      await Bun.sleep(Math.min(left, WAIT_RETRY_MAX_MS, WAIT_RETRY_MS * 2 ** attempt));
    }
  }
}

/** What the driver said, without the URL's password should it quote it. */
function reasonOf(err: unknown, url: string | undefined): string {
  const cause = (err as { cause?: unknown }).cause;
  let why = cause instanceof Error && cause.message ? cause.message : String((err as Error).message);
  let password = "";
  try {
    password = url ? new URL(url).password : "";
  } catch {}
  for (const secret of [password, safeDecode(password)]) if (secret) why = why.split(secret).join("***");
  return why;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
