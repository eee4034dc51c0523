/**
 * Runs `regex` field rules off the main thread with a time budget. A JavaScript regex cannot be
 * interrupted, so a pattern that backtracks catastrophically on some input would freeze the whole
 * server; the static checks of `parseFieldRules` refuse the known shapes, and this budget catches
 * whatever slips past them (the worker is terminated and the value counts as not matching).
 */

const WORKER_SOURCE = `
const cache = new Map();
self.onmessage = (e) => {
  const { sab, source, value } = e.data;
  const out = new Int32Array(sab);
  Atomics.store(out, 0, 9);
  Atomics.notify(out, 0);
  let r = 2;
  try {
    let re = cache.get(source);
    if (!re) { re = new RegExp(source); if (cache.size > 1000) cache.clear(); cache.set(source, re); }
    r = re.test(value) ? 1 : 2;
  } catch { r = 3; }
  Atomics.store(out, 0, r);
  Atomics.notify(out, 0);
};`;

/** Milliseconds one regex test may take before its value is refused. */
export const REGEX_BUDGET_MS = 100;
/** Milliseconds to wait for the worker to pick the job up (start-up on a loaded machine). */
const PICKUP_MS = 5000;
const STARTED = 9;

let workerUrl: string | null = null;
let worker: Worker | null = null;

function getWorker(): Worker {
  if (worker) return worker;
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const w = new Worker(workerUrl);
  // An idle checker must not keep the process (or a test run) alive.
  (w as Worker & { unref?: () => void }).unref?.();
  worker = w;
  return w;
}

/**
 * True when `value` matches `source`, false when it does not, does not compile, or takes longer
 * than the budget (a pattern that slow on this value is treated as a refusal, never a hang).
 */
export function matchesPattern(source: string, value: string, budgetMs = REGEX_BUDGET_MS): boolean {
  let w: Worker;
  try {
    w = getWorker();
  } catch {
    // No worker threads here: the static checks of parseFieldRules are the only guard left.
    return new RegExp(source).test(value);
  }
  const sab = new SharedArrayBuffer(4);
  const flag = new Int32Array(sab);
  w.postMessage({ sab, source, value });
  // IMPORTANT: bounded waits; on time-out the worker (and its runaway regex) is killed. The
  // budget starts when the worker begins the test, so a slow start-up is not a refusal.
  Atomics.wait(flag, 0, 0, PICKUP_MS);
  if (Atomics.load(flag, 0) === STARTED) Atomics.wait(flag, 0, STARTED, budgetMs);
  const r = Atomics.load(flag, 0);
  if (r === 0 || r === STARTED) {
    w.terminate();
    if (worker === w) worker = null;
    return false;
  }
  return r === 1;
}
