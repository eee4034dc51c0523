/** @clack/prompts (and the node:readline and node:tty it loads) only when a prompt is shown: never for `serve`. */
const loadClack = () => import("@clack/prompts");

/** True when a person can answer prompts: stdin and stdout are both terminals. */
export function isInteractive(): boolean {
  return !!process.stdin.isTTY && !!process.stdout.isTTY;
}

/** Asks a yes/no question; false when cancelled. Only call when isInteractive(). */
export async function confirm(message: string): Promise<boolean> {
  const clack = await loadClack();
  const answer = await clack.confirm({ message, initialValue: false });
  return answer === true;
}

/** Asks for a password without echoing it; null when cancelled. Only call when isInteractive(). */
export async function askPassword(message: string): Promise<string | null> {
  const clack = await loadClack();
  const answer = await clack.password({ message, mask: "*" });
  return clack.isCancel(answer) ? null : answer;
}

/** Runs `work` under a spinner when `show` is true (a terminal and no --json), else just runs it. */
export async function withSpinner<T>(show: boolean, label: string, work: () => T | Promise<T>): Promise<T> {
  if (!show) return await work();
  const s = (await loadClack()).spinner();
  s.start(label);
  try {
    const result = await work();
    s.stop(`${label}: done`);
    return result;
  } catch (err) {
    s.stop(`${label}: failed`);
    throw err;
  }
}

/** A progress callback `(done, total)` for `work`; on a terminal it draws a bar labelled `label`, else it does nothing. */
export async function withProgressBar<T>(
  show: boolean,
  label: string,
  work: (report: (done: number, total: number) => void) => Promise<T>,
): Promise<T> {
  if (!show) return await work(() => {});
  const clack = await loadClack();
  let bar: ReturnType<typeof clack.progress> | null = null;
  let shown = 0;
  const report = (done: number, total: number) => {
    if (!bar) {
      bar = clack.progress({ max: Math.max(total, 1) });
      bar.start(`${label}: 0 of ${total}`);
    }
    if (done > shown) bar.advance(done - shown, `${label}: ${done} of ${total}`);
    shown = Math.max(shown, done);
  };
  try {
    const result = await work(report);
    (bar as ReturnType<typeof clack.progress> | null)?.stop(`${label}: done`);
    return result;
  } catch (err) {
    (bar as ReturnType<typeof clack.progress> | null)?.stop(`${label}: failed`);
    throw err;
  }
}
