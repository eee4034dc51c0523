import * as clack from "@clack/prompts";

/** True when a person can answer prompts: stdin and stdout are both terminals. */
export function isInteractive(): boolean {
  return !!process.stdin.isTTY && !!process.stdout.isTTY;
}

/** Asks a yes/no question; false when cancelled. Only call when isInteractive(). */
export async function confirm(message: string): Promise<boolean> {
  const answer = await clack.confirm({ message, initialValue: false });
  return answer === true;
}

/** Asks for a password without echoing it; null when cancelled. Only call when isInteractive(). */
export async function askPassword(message: string): Promise<string | null> {
  const answer = await clack.password({ message, mask: "*" });
  return clack.isCancel(answer) ? null : answer;
}

/** Runs `work` under a spinner when `show` is true (a terminal and no --json), else just runs it. */
export async function withSpinner<T>(show: boolean, label: string, work: () => T | Promise<T>): Promise<T> {
  if (!show) return await work();
  const s = clack.spinner();
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
