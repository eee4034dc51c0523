import { basename } from "node:path";
import type { Principal } from "../principal.ts";
import { AppError } from "../errors.ts";
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
 * the caller's transaction. A throw becomes 400 `hook_rejected` (or the thrown object's `status`), and the
 * caller's transaction rolls back.
 */
export function runHooks(hooks: readonly HookModule[], name: HookName, event: HookEvent): void {
  for (const h of hooks) {
    const fn = h[name];
    if (!fn) continue;
    const data = event.data;
    try {
      const out = fn(event) as unknown;
      if (out && typeof (out as Promise<unknown>).then === "function") {
        // A rejected promise nobody awaits would be reported as unhandled; the hook already failed.
        (out as Promise<unknown>).catch(() => {});
        // The file's name only: the client must not learn where the server keeps its hooks.
        throw new Error(`hook ${name} of ${h.file ? basename(h.file) : h.collection} returned a promise; hooks must be synchronous`);
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw hookRejected(err);
    }
    if (data && event.data !== data) adoptReplacedData(data, event.data);
    event.data = data;
  }
}

/** A before* hook may also assign a new object to `event.data`: its fields replace the original's. */
function adoptReplacedData(target: Record<string, unknown>, next: unknown): void {
  if (!next || typeof next !== "object" || Array.isArray(next))
    throw new AppError(400, "hook_rejected", "a hook set event.data to something that is not an object");
  for (const k of Object.keys(target)) delete target[k];
  Object.assign(target, next);
}

function hookRejected(err: unknown): AppError {
  const e = err as { message?: unknown; status?: unknown } | string;
  const message =
    typeof e === "string" ? e : typeof e?.message === "string" && e.message ? e.message : "rejected by a hook";
  const status = typeof e === "object" && typeof e?.status === "number" && e.status >= 400 && e.status < 600 ? e.status : 400;
  return new AppError(status, "hook_rejected", message);
}
