import type { AppContext } from "../context.ts";

/**
 * Readiness (`GET /ready`): whether this server should get traffic now. `/health` says only that the process
 * answers (liveness); a load balancer or an orchestrator also needs to know when a node can do nothing but answer
 * 503 (starting, stopping, or its database gone), to send the traffic elsewhere meanwhile.
 */

/** Where a server is in its life: set by startServer; a context without a server (tests, the CLI) is serving. */
export type Phase = "starting" | "serving" | "stopping";

/** Why a server is not ready, as the 503 body's `reason` says it. */
export type NotReady = "starting" | "stopping" | "database_unavailable";

export type Readiness = { ready: true } | { ready: false; reason: NotReady; message: string };

/** How long an answer about the database is reused: a probe every second from each of several balancers costs one statement. */
export const READY_CACHE_MS = 1_000;
/** How long the database may take to answer the check before the server counts as not ready. */
export const READY_TIMEOUT_MS = 2_000;

interface State {
  phase: Phase;
  /** The last check of the database, and when it was made. */
  checked: { at: number; ok: boolean } | null;
  /** The check on its way, shared by the probes that come meanwhile. */
  checking: Promise<boolean> | null;
}

const states = new WeakMap<AppContext, State>();

function stateOf(ctx: AppContext): State {
  let s = states.get(ctx);
  if (!s) states.set(ctx, (s = { phase: "serving", checked: null, checking: null }));
  return s;
}

/** Says where the server of `ctx` is in its life (startServer). */
export function setPhase(ctx: AppContext, phase: Phase): void {
  stateOf(ctx).phase = phase;
}

/** One cheap statement, bounded in time: true when the database answered it. */
async function databaseAnswers(ctx: AppContext): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS)));
  const asked = ctx.db.get("SELECT 1 AS ok").then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the server of `ctx` is ready: serving (not starting nor stopping), and its database answers. */
export async function readiness(ctx: AppContext): Promise<Readiness> {
  const s = stateOf(ctx);
  if (s.phase === "starting") return { ready: false, reason: "starting", message: "the server is starting" };
  if (s.phase === "stopping") return { ready: false, reason: "stopping", message: "the server is stopping" };
  const now = Date.now();
  let ok: boolean;
  if (s.checked && now - s.checked.at < READY_CACHE_MS) ok = s.checked.ok;
  else {
    s.checking ??= databaseAnswers(ctx).then((answered) => {
      s.checked = { at: Date.now(), ok: answered };
      s.checking = null;
      return answered;
    });
    ok = await s.checking;
  }
  return ok ? { ready: true } : { ready: false, reason: "database_unavailable", message: "the database does not answer" };
}
