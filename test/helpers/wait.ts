/**
 * Polls `cond` until it returns a truthy value and returns that value; throws once `timeoutMs` has
 * passed without it. Use it instead of a fixed sleep whenever the thing waited for can be observed
 * (a log line, a port that answers, a prompt on the terminal, a row in the database).
 */
export async function waitFor<T>(
  cond: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 10, what = "the condition" } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await cond();
    if (value) return value as NonNullable<T>;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}
