/**
 * Polls `cond` until it returns a truthy value and returns that value. Use it instead of a fixed sleep
 * whenever the thing waited for can be observed (a log line, a port that answers, a prompt on the
 * terminal, a row in the database).
 *
 * The wait is bounded by progress, not by the clock alone: it fails once `timeoutMs` pass without the
 * condition, and with `progress` (e.g. the number of events received so far) the time counts from its
 * last change, so a slow machine that keeps delivering is given the time it needs. The default budget
 * is generous (30 s): on a quiet machine what is waited for takes milliseconds, and a busy one (other
 * test runs, a load of 10 on 2 cores) must not turn a wait into a failure.
 */
export async function waitFor<T>(
  cond: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string; progress?: () => unknown } = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 30_000, intervalMs = 10, what = "the condition", progress } = opts;
  let last = progress?.();
  let deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await cond();
    if (value) return value as NonNullable<T>;
    if (progress) {
      const now = progress();
      if (!Object.is(now, last)) (last = now), (deadline = Date.now() + timeoutMs);
    }
    if (Date.now() >= deadline)
      throw new Error(`timed out after ${timeoutMs} ms ${progress ? `without progress (at ${String(last)}) ` : ""}waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}
