import type { ChangeEvent, EventBus } from "../events/bus.ts";
import type { Logger } from "../log.ts";
import type { CommitEvent, HookSet } from "./types.ts";

/**
 * The event as `onCommit` gets it: section 10's change event, where a hard delete is a `delete`
 * whose record is `{ _id }` only; its last state stays in `previous`, and `hard: true` tells it
 * from a soft delete. Each handler gets its own copy.
 */
function commitEvent(event: ChangeEvent): CommitEvent {
  const copy = structuredClone(event);
  if (copy.action !== "hard_delete") return copy as CommitEvent;
  return { ...copy, action: "delete", record: { _id: copy.record._id }, hard: true };
}

/** The subscription of the onCommit handlers on each event bus (one per context), replaced when the hooks are reloaded. */
const subscriptions = new WeakMap<EventBus, () => void>();

/**
 * Subscribes the hook files' `onCommit` handlers to the change-event bus (CONTRACT §5): each
 * runs after the commit, once per changed record of its collection (or "*"), with its own copy
 * of the event. A throw or a rejected promise is logged and never reaches the client, whose
 * operation has already committed. Called again after the hooks were reloaded (ops/hook-files.ts), it
 * replaces the handlers subscribed before. Returns the function that unsubscribes them.
 */
export function subscribeCommitHooks(set: HookSet, events: EventBus, log: Logger): () => void {
  subscriptions.get(events)?.();
  subscriptions.delete(events);
  const hooks = set.list.filter((h) => typeof h.onCommit === "function");
  if (!hooks.length) return () => {};
  const failed = (file: string | undefined, event: ChangeEvent, err: unknown) =>
    log.error("onCommit hook failed", {
      hook: file ?? null,
      collection: event.collection,
      action: event.action,
      id: event.record._id ?? null,
      error: err instanceof Error ? err.message : String(err),
    });
  const unsubscribe = events.subscribe((event) => {
    const lower = event.collection.toLowerCase();
    for (const h of hooks) {
      if (h.collection !== "*" && h.collection.toLowerCase() !== lower) continue;
      try {
        const out = h.onCommit!(commitEvent(event)) as unknown;
        if (out && typeof (out as Promise<unknown>).then === "function")
          (out as Promise<unknown>).then(undefined, (err: unknown) => failed(h.file, event, err));
      } catch (err) {
        failed(h.file, event, err);
      }
    }
  });
  const off = () => {
    unsubscribe();
    if (subscriptions.get(events) === off) subscriptions.delete(events);
  };
  subscriptions.set(events, off);
  return off;
}
