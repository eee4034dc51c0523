/**
 * Runs after-commit callbacks in the order they were queued. One that throws is reported to `onError`
 * and does not stop the others: the commit has happened, so nothing may look as if it had not.
 */
export function runAfterCommit(cbs: readonly (() => void)[], onError: (err: unknown) => void): void {
  for (const cb of cbs) {
    try {
      cb();
    } catch (err) {
      onError(err);
    }
  }
}
