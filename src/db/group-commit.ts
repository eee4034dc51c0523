import { AsyncLocalStorage } from "node:async_hooks";

// What both engines' transactions share: the bookkeeping of a transaction per async context, nested
// transactions as savepoints, and group commit, several outermost transactions sharing one database
// transaction and its COMMIT. Each engine says only what differs: how it begins, commits and rolls back on its
// connection(s), which members of a group run side by side, and what a failure that the database transaction
// cannot undo alone costs the others (see SqliteEngine.commitGroup, PostgresEngine.runGroup).

/** Most transactions one COMMIT acknowledges; later ones wait for the next. */
export const MAX_GROUP = 64;

/** The transaction of one async context: an outermost transaction, or one member of a group. */
export interface TxState {
  /** Callbacks to run once the database transaction commits, in the order they were queued. */
  afterCommit: (() => void)[];
  /** The run of the database transaction it is part of (Engine.transactionRun): the members of a group share one. */
  run: object;
  /** Savepoints open inside it (names the next one). */
  depth: number;
  /** Statements of it that may have written: a member that fails having sent none leaves nothing to undo. */
  writes: number;
  /** False once it ended (committed, rolled back, or its member done): a statement of its context that comes later runs on its own. */
  open: boolean;
}

/** The fields of a new TxState in the run `run`. */
export function newTxState(run: object): TxState {
  return { afterCommit: [], run, depth: 0, writes: 0, open: true };
}

/**
 * One level of a transaction, as the async context sees it: nested transactions started at the same level
 * (e.g. together in a Promise.all) run one after the other, each in its own savepoint.
 */
interface Scope<Tx extends TxState> {
  tx: Tx;
  queue: Promise<unknown>;
}

/** A transaction waiting in a group. */
export interface Member {
  fn: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** A member whose run succeeded: answered once the COMMIT succeeds. */
export interface Done<M extends Member, Tx extends TxState> {
  member: M;
  tx: Tx;
  ok: true;
  value: unknown;
}

/** A member whose run failed. */
export interface Failed<M extends Member, Tx extends TxState> {
  member: M;
  tx: Tx;
  ok: false;
  error: unknown;
}

/** How a member's run in a group ended. */
export type Outcome<M extends Member, Tx extends TxState> = Done<M, Tx> | Failed<M, Tx>;

/** How an engine opens, releases and rolls back to a savepoint of a transaction. */
export interface SavepointOps<Tx extends TxState> {
  /** Opens it; what it returns is given to `undo`. */
  open(tx: Tx, name: string): unknown;
  release(tx: Tx, name: string): void | Promise<void>;
  /** Rolls back to the savepoint and releases it, leaving the transaction as it was before it (as far as it can). */
  undo(tx: Tx, name: string, opened: unknown): void | Promise<void>;
  /** The error the nested transaction fails with (the engine's own mapping). */
  mapError(err: unknown): unknown;
}

/** The transactions of one engine, by async context. */
export class Transactions<Tx extends TxState> {
  private readonly als = new AsyncLocalStorage<Scope<Tx>>();

  /** `onCallbackError` hears an after-commit callback that threw (the commit stands). */
  constructor(
    private readonly savepoints: SavepointOps<Tx>,
    private readonly onCallbackError: (err: unknown) => void,
  ) {}

  /** The open transaction of the current async context, if any. */
  current(): Tx | undefined {
    const tx = this.als.getStore()?.tx;
    return tx?.open === true ? tx : undefined;
  }

  /** Engine.transactionRun. */
  transactionRun(): object | undefined {
    return this.current()?.run;
  }

  /** Engine.afterCommit: queued on the open transaction, else run at once. */
  afterCommit(cb: () => void): void {
    const tx = this.current();
    if (tx) tx.afterCommit.push(cb);
    else this.runCallbacks([cb]);
  }

  /**
   * Runs after-commit callbacks in the order they were queued. One that throws is reported and does not stop
   * the others: the commit has happened, so nothing may look as if it had not.
   */
  runCallbacks(cbs: readonly (() => void)[]): void {
    for (const cb of cbs) {
      try {
        cb();
      } catch (err) {
        this.onCallbackError(err);
      }
    }
  }

  /** Runs `fn` as the body of `tx`, in an async context of its own whose statements join `tx`. */
  runIn<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
    return this.als.run({ tx, queue: Promise.resolve() }, fn);
  }

  /**
   * A transaction started inside an open one: a savepoint that rolls back alone when `fn` throws (and drops the
   * after-commit callbacks queued meanwhile). Null when the current context has no open transaction. Nested
   * transactions of one level run one after the other, a failed one not stopping the next.
   */
  nested<T>(fn: () => Promise<T>): Promise<T> | null {
    const scope = this.als.getStore();
    if (!scope || !scope.tx.open) return null;
    const run = scope.queue.then(
      () => this.savepoint(scope.tx, fn),
      () => this.savepoint(scope.tx, fn),
    );
    scope.queue = run.catch(() => {});
    return run;
  }

  private async savepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
    const name = `sp${++tx.depth}`;
    const mark = tx.afterCommit.length;
    try {
      const opened = await this.savepoints.open(tx, name);
      try {
        const result = await this.runIn(tx, fn);
        await this.savepoints.release(tx, name);
        return result;
      } catch (err) {
        tx.afterCommit.length = mark;
        await this.savepoints.undo(tx, name, opened);
        throw err;
      }
    } catch (err) {
      throw this.savepoints.mapError(err);
    } finally {
      tx.depth--;
    }
  }

  /**
   * Runs one member of a group as `tx` (in an async context of its own), and ends `tx` after it. `after` runs
   * once the member returned: an error it returns fails the run all the same (PostgreSQL: a statement of it
   * failed, which dooms the transaction; SQLite: its savepoint could not be released).
   */
  async runMember<M extends Member>(member: M, tx: Tx, after?: (tx: Tx) => unknown): Promise<Outcome<M, Tx>> {
    try {
      const value = await this.runIn(tx, member.fn);
      const error = after?.(tx);
      if (error !== undefined) return { member, tx, ok: false, error };
      return { member, tx, ok: true, value };
    } catch (err) {
      return { member, tx, ok: false, error: err };
    } finally {
      tx.open = false;
    }
  }

  /** Answers the members of a committed database transaction: each one's callbacks run, then it is answered, in order. */
  answer<M extends Member>(done: readonly Done<M, Tx>[]): void {
    for (const d of done) {
      this.runCallbacks(d.tx.afterCommit);
      d.member.resolve(d.value);
    }
  }
}
