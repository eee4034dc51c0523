import type { Principal } from "../principal.ts";
import { AppError, thrownValidation } from "../errors.ts";
import type { HookEvent, HookModule, HookName } from "./types.ts";

/** The `auth` part of a hook event. */
export function hookAuth(p: Principal): HookEvent["auth"] {
  return { kind: p.kind, id: p.kind === "user" ? p.userId : null, roles: p.kind === "user" ? p.roles : [] };
}

/** True when one of `hooks` (a collection's: CollectionHandle.hooks) has a handler of one of `names`. */
export function hasHooks(hooks: readonly HookModule[], ...names: HookName[]): boolean {
  return hooks.length > 0 && hooks.some((h) => names.some((n) => h[n]));
}

/**
 * Runs the handlers of `name` among `hooks` (a collection's, in load order: CollectionHandle.hooks) inside
 * the caller's transaction, one after the other. A handler may be async (CONTRACT §15): the rest wait for it, and
 * the answer is then a promise (undefined when every handler was synchronous, so a caller of synchronous hooks
 * waits for nothing). A throw or rejection becomes 400 `hook_rejected` (or the thrown object's `status`), and the
 * caller's transaction rolls back.
 */
export function runHooks(hooks: readonly HookModule[], name: HookName, event: HookEvent, from = 0): Promise<void> | undefined {
  for (let i = from; i < hooks.length; i++) {
    const fn = hooks[i]![name];
    if (!fn) continue;
    const data = event.data;
    let out: unknown;
    try {
      out = fn(event);
    } catch (err) {
      throw rejected(err);
    }
    if (out && typeof (out as Promise<unknown>).then === "function") return finishAsync(hooks, name, event, i, out as Promise<unknown>, data);
    settleData(event, data);
  }
  return undefined;
}

/** `runHooks` from handler `i`, whose promise `pending` is still running, on. */
async function finishAsync(hooks: readonly HookModule[], name: HookName, event: HookEvent, i: number, pending: Promise<unknown>, data: HookEvent["data"]): Promise<void> {
  try {
    await pending;
  } catch (err) {
    throw rejected(err);
  }
  settleData(event, data);
  await runHooks(hooks, name, event, i + 1);
}

function rejected(err: unknown): AppError {
  return err instanceof AppError ? err : hookRejected(err);
}

/** After a handler: `data` stays the object the write reads, with what a handler that replaced it put in the new one. */
function settleData(event: HookEvent, data: HookEvent["data"]): void {
  if (data && event.data !== data) adoptReplacedData(data, event.data);
  event.data = data;
}

/** A before* hook may also assign a new object to `event.data`: its fields replace the original's. */
function adoptReplacedData(target: Record<string, unknown>, next: unknown): void {
  if (!next || typeof next !== "object" || Array.isArray(next))
    throw new AppError(400, "hook_rejected", "a hook set event.data to something that is not an object");
  for (const k of Object.keys(target)) delete target[k];
  Object.assign(target, next);
}

function hookRejected(err: unknown): AppError {
  const e = err as { message?: unknown; status?: unknown; errors?: unknown } | string;
  const message =
    typeof e === "string" ? e : typeof e?.message === "string" && e.message ? e.message : "rejected by a hook";
  const status = typeof e === "object" && typeof e?.status === "number" && e.status >= 400 && e.status < 600 ? e.status : 400;
  // 422 answers in its own shape (CONTRACT §1): `{ errors: [...] }`, the thrown `errors` or one of rule "hook".
  if (status === 422) return thrownValidation(typeof e === "object" ? e?.errors : undefined, message, "hook");
  return new AppError(status, "hook_rejected", message);
}
