import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Change events (CONTRACT §5, §10): one per committed change of a record, in commit order.
 * Writers `stage` events inside their transaction; `inTransaction` publishes them when the
 * outermost transaction commits and drops them when it (or the savepoint that staged them)
 * rolls back, so a subscriber never sees a change that did not happen.
 */

export type ChangeAction = "create" | "update" | "delete" | "restore" | "hard_delete";

export interface ChangeEvent {
  collection: string;
  action: ChangeAction;
  /** The record as stored after the change (for `hard_delete`, as it was before). */
  record: Record<string, unknown>;
  /** The record before the change (update, delete, restore, hard_delete). */
  previous?: Record<string, unknown>;
  /** Unix ms of the change. */
  at: number;
  /** Who made it: a user id, "admin", or null (anonymous, CLI, system). */
  by: string | null;
}

export type ChangeListener = (event: ChangeEvent) => void;

export interface EventBus {
  /** Queues an event of the running transaction. */
  stage(event: ChangeEvent): void;
  /** Position of the queue, taken when a savepoint opens. */
  mark(): number;
  /** Drops what was staged after `mark` (a rolled-back savepoint or transaction). */
  rollbackTo(mark: number): void;
  /**
   * The events staged after `mark` and not yet delivered: the queued objects themselves, which a writer
   * may complete before the commit.
   */
  stagedSince(mark: number): readonly ChangeEvent[];
  /** Delivers the staged events (or `queue`, one of `isolated`) to every listener, in order, and empties it. */
  commit(queue?: ChangeEvent[]): void;
  /**
   * Runs `fn` with a staging queue of its own, handed to it: `stage`, `mark` and `rollbackTo` of its
   * async context use that queue. For an engine whose transactions run concurrently in one process
   * (PostgreSQL), so one transaction's commit or rollback never touches another's events.
   */
  isolated<T>(fn: (queue: ChangeEvent[]) => Promise<T>): Promise<T>;
  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: ChangeListener): () => void;
  /**
   * Adds a listener called once per committed transaction, before the change listeners, with its events
   * (none when it changed no record, e.g. a catalog change): for in-process caches. It must not throw.
   */
  onCommit(listener: (events: readonly ChangeEvent[]) => void): () => void;
}

/** A listener that throws is reported to `onError` and never stops the others. */
export function createEventBus(onError: (err: unknown, event: ChangeEvent) => void): EventBus {
  let staged: ChangeEvent[] = [];
  // Made at the first isolated transaction (every outermost one, see inTransaction).
  let scoped: AsyncLocalStorage<ChangeEvent[]> | null = null;
  const queue = () => scoped?.getStore() ?? staged;
  const listeners = new Set<ChangeListener>();
  const commitListeners = new Set<(events: readonly ChangeEvent[]) => void>();
  return {
    stage(event) {
      queue().push(event);
    },
    mark: () => queue().length,
    rollbackTo(mark) {
      const q = queue();
      q.length = Math.min(q.length, mark);
    },
    stagedSince: (mark) => queue().slice(mark),
    isolated(fn) {
      scoped ??= new AsyncLocalStorage();
      const own: ChangeEvent[] = [];
      return scoped.run(own, () => fn(own));
    },
    commit(given) {
      let events: ChangeEvent[];
      if (given) {
        events = given.splice(0);
      } else {
        events = staged;
        staged = [];
      }
      for (const listener of commitListeners) listener(events);
      if (events.length === 0) return;
      for (const event of events) {
        for (const listener of listeners) {
          try {
            listener(event);
          } catch (err) {
            onError(err, event);
          }
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onCommit(listener) {
      commitListeners.add(listener);
      return () => commitListeners.delete(listener);
    },
  };
}
