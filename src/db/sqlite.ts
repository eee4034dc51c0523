import type { Database } from "bun:sqlite";
import { AsyncLocalStorage } from "node:async_hooks";
import { runAfterCommit } from "./after-commit.ts";
import type { Engine, RunResult, SqlValue } from "./engine.ts";
import { mapSqliteError } from "./sqlite-errors.ts";

/** The transaction of one async context. */
interface Tx {
  open: boolean;
  /** Savepoints currently open inside it. */
  depth: number;
  afterCommit: (() => void)[];
}

const NO_PARAMS: readonly SqlValue[] = [];

/**
 * The SQLite engine: one bun:sqlite connection. Statements are prepared once and cached by their
 * text (`db.query`). A transaction belongs to the async context that opened it (AsyncLocalStorage);
 * a mutex makes other contexts wait, both their transactions and their plain statements, so nothing
 * ever runs inside someone else's transaction.
 */
export class SqliteEngine implements Engine {
  readonly dialect = "sqlite" as const;
  private readonly als = new AsyncLocalStorage<Tx>();
  private locked = false;
  private readonly waiters: (() => void)[] = [];

  /**
   * `onCallbackError` hears an after-commit callback that threw (the commit stands).
   */
  constructor(
    readonly sqlite: Database,
    private readonly onCallbackError: (err: unknown) => void = (err) => console.error("after-commit callback failed", err),
  ) {}

  /** True when this context may use the connection now: no transaction open, or its own. */
  private free(): boolean {
    if (!this.locked) return true;
    const tx = this.als.getStore();
    return tx !== undefined && tx.open;
  }

  get<T = Record<string, unknown>>(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<T | null> {
    if (!this.free()) return this.queued(() => this.getNow<T>(sql, params));
    try {
      return Promise.resolve(this.getNow<T>(sql, params));
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  all<T = Record<string, unknown>>(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<T[]> {
    if (!this.free()) return this.queued(() => this.allNow<T>(sql, params));
    try {
      return Promise.resolve(this.allNow<T>(sql, params));
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  run(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<RunResult> {
    if (!this.free()) return this.queued(() => this.runNow(sql, params));
    try {
      return Promise.resolve(this.runNow(sql, params));
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  exec(sql: string): Promise<void> {
    if (!this.free()) return this.queued(() => void this.sqlite.exec(sql));
    try {
      this.sqlite.exec(sql);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  private getNow<T>(sql: string, params: readonly SqlValue[]): T | null {
    return (this.sqlite.query(sql).get(...(params as SqlValue[])) as T | null) ?? null;
  }

  private allNow<T>(sql: string, params: readonly SqlValue[]): T[] {
    return this.sqlite.query(sql).all(...(params as SqlValue[])) as T[];
  }

  private runNow(sql: string, params: readonly SqlValue[]): RunResult {
    return { changes: this.sqlite.query(sql).run(...(params as SqlValue[])).changes };
  }

  /** Runs a plain statement once no other context holds the connection. */
  private async queued<T>(fn: () => T): Promise<T> {
    await this.lock();
    try {
      return fn();
    } catch (err) {
      throw mapSqliteError(err);
    } finally {
      this.unlock();
    }
  }

  private lock(): Promise<void> | void {
    if (!this.locked) {
      this.locked = true;
      return;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Hands the connection to the next waiter, in arrival order. */
  private unlock(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  inTransaction(): boolean {
    const tx = this.als.getStore();
    return tx !== undefined && tx.open;
  }

  afterCommit(cb: () => void): void {
    const tx = this.als.getStore();
    if (tx && tx.open) tx.afterCommit.push(cb);
    else this.runCallbacks([cb]);
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const current = this.als.getStore();
    if (current && current.open) return this.savepoint(current, fn);
    await this.lock();
    const tx: Tx = { open: true, depth: 0, afterCommit: [] };
    let result: T;
    try {
      this.sqlite.exec("BEGIN IMMEDIATE");
      try {
        result = await this.als.run(tx, fn);
        this.sqlite.exec("COMMIT");
      } catch (err) {
        if (this.sqlite.inTransaction) this.sqlite.exec("ROLLBACK");
        throw err;
      }
    } catch (err) {
      throw mapSqliteError(err);
    } finally {
      tx.open = false;
      this.unlock();
    }
    this.runCallbacks(tx.afterCommit);
    return result;
  }

  private async savepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
    const name = `sp${++tx.depth}`;
    const mark = tx.afterCommit.length;
    this.sqlite.exec(`SAVEPOINT ${name}`);
    try {
      const result = await fn();
      this.sqlite.exec(`RELEASE ${name}`);
      return result;
    } catch (err) {
      if (this.sqlite.inTransaction) {
        this.sqlite.exec(`ROLLBACK TO ${name}`);
        this.sqlite.exec(`RELEASE ${name}`);
      }
      tx.afterCommit.length = mark;
      throw mapSqliteError(err);
    } finally {
      tx.depth--;
    }
  }

  private runCallbacks(cbs: (() => void)[]): void {
    runAfterCommit(cbs, this.onCallbackError);
  }

  async close(): Promise<void> {
    await this.lock();
    try {
      this.sqlite.exec("PRAGMA optimize");
    } catch {}
    this.sqlite.close();
    this.unlock();
  }
}
