import { Database, type Statement } from "bun:sqlite";
import type { ChangeMarks, Engine, RunResult, SqlValue, TransactionOptions } from "./engine.ts";
import { MAX_GROUP, newTxState, Transactions, type Done, type Member, type TxState } from "./group-commit.ts";
import { sqliteDialect } from "./sqlite-dialect.ts";
import { mapSqliteError } from "./sqlite-errors.ts";
import { MAX_STATEMENTS, StatementCache } from "./statements.ts";

/** A transaction waiting in a group (see SqliteEngine.transaction). */
interface SqliteMember extends Member {
  /** It may run again after a rollback (TransactionOptions.group): it runs without a savepoint of its own. */
  rerunnable?: boolean;
}

interface Group {
  members: SqliteMember[];
}

/** The state of a group's run (see commitGroup). */
interface GroupRun {
  /** The run of the SQLite transaction (Engine.transactionRun), new after a start over. */
  run: object;
  /** The members whose run succeeded, answered once the COMMIT succeeds. */
  done: Done<SqliteMember, TxState>[];
  /** The member running or next to run: those from it on never finished when the transaction itself fails. */
  next: number;
  /** After a start over (or a member that may not run again) every member runs in a savepoint. */
  careful: boolean;
}

/** A read waiting for the end of the turn (SqliteEngine.getBatched). */
interface PendingRead {
  /** Its text, not its statement: another read may fill the statement cache meanwhile, which finalizes what it held. */
  sql: string;
  params: readonly SqlValue[];
  resolve: (row: unknown) => void;
  reject: (error: unknown) => void;
}

const NO_PARAMS: readonly SqlValue[] = [];

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Read on the writing connection even while another context's transaction holds it: it tells this
 * connection's view of other connections' commits (the catalog's freshness check), reads no row, and is
 * the same inside a transaction as outside.
 */
const DATA_VERSION = "PRAGMA data_version";

/** A statement that only reads, told by its text: a SELECT (or WITH … SELECT) naming no write. */
function readsOnly(sql: string): boolean {
  return /^\s*(?:SELECT|WITH)\b/i.test(sql) && !/\b(?:INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql);
}

/** Who holds a database file's connection(s) in this process: one transaction at a time. */
interface FileLock {
  locked: boolean;
  waiters: (() => void)[];
  engines: number;
}

/**
 * Locks shared by every engine of this process on the same file. A transaction stays open across
 * awaits, and SQLite's busy wait blocks the thread: a second connection to the same file in this
 * process (tests, tools) must wait here, asynchronously, or the two would wait for each other.
 */
const fileLocks = new Map<string, FileLock>();

function lockFor(sqlite: Database): FileLock {
  const file = sqlite.filename;
  const fresh: FileLock = { locked: false, waiters: [], engines: 0 };
  if (!file || file === ":memory:") return fresh;
  let lock = fileLocks.get(file);
  if (!lock) fileLocks.set(file, (lock = fresh));
  lock.engines++;
  return lock;
}

/**
 * The SQLite engine: one bun:sqlite connection that writes, and a second, read-only one. Statements
 * are prepared once and cached by their text. A transaction belongs to the async context that opened
 * it (AsyncLocalStorage); a mutex makes other contexts wait, both their transactions and their plain
 * writes, so nothing ever runs inside someone else's transaction. Engines of this process on the same
 * file share it. A read of another context, made while a transaction holds the writing connection,
 * does not wait: it runs on the reading connection, which (WAL) sees every commit made before the
 * statement starts and nothing uncommitted. An in-memory database has no second connection (it would be
 * another database): there such reads wait as writes do.
 */
export class SqliteEngine implements Engine {
  readonly sql = sqliteDialect;
  readonly groupBeginsAfterJoin = false;
  /** The transaction of each async context (see group-commit.ts). */
  private readonly transactions: Transactions<TxState>;
  private readonly fileLock: FileLock;
  /** The write transaction being run, which transactions that start meanwhile join. */
  private group: Group | null = null;
  /** The reading connection: undefined until first needed, null when there is none (in-memory, not WAL). */
  private reader: Database | null | undefined;
  /** Its prepared statements, while it is open. */
  private readStatements: StatementCache | null = null;
  /** Whether a statement's text is a plain read (`readsOnly`), by text: asked for every read a transaction would hold up. */
  private readonly readKinds = new Map<string, boolean>();

  /**
   * `onCallbackError` hears an after-commit callback that threw (the commit stands).
   */
  constructor(
    readonly sqlite: Database,
    onCallbackError: (err: unknown) => void = (err) => console.error("after-commit callback failed", err),
  ) {
    this.fileLock = lockFor(sqlite);
    this.transactions = new Transactions<TxState>(
      {
        open: (_tx, name) => this.control(`SAVEPOINT ${name}`),
        release: (_tx, name) => this.control(`RELEASE ${name}`),
        undo: (_tx, name) => {
          if (!this.sqlite.inTransaction) return;
          this.control(`ROLLBACK TO ${name}`);
          this.control(`RELEASE ${name}`);
        },
        mapError: mapSqliteError,
      },
      onCallbackError,
    );
  }

  /** Runs a transaction control statement (BEGIN, SAVEPOINT, COMMIT, …) on the writing connection. */
  private control(sql: string): void {
    this.sqlite.query(sql).run();
  }

  /** True when this context may use the connection now: no transaction open, or its own. */
  private free(): boolean {
    if (!this.fileLock.locked) return true;
    return this.transactions.current() !== undefined;
  }

  get<T = Record<string, unknown>>(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<T | null> {
    try {
      if (this.free() || sql === DATA_VERSION) return Promise.resolve(this.getNow<T>(sql, params));
      const read = this.readStatement(sql);
      if (!read) return this.queued(() => this.getNow<T>(sql, params));
      return Promise.resolve((read.get(...(params as SqlValue[])) as T | null) ?? null);
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  /** Reads waiting for the end of this event-loop turn (see getBatched), or null when none is. */
  private pendingReads: PendingRead[] | null = null;

  /**
   * As `get`, for a plain read outside any transaction of this context: it runs at the end of this
   * event-loop turn, on the reading connection, together with the other reads of the turn in one read
   * transaction (one snapshot taken after every one of them was asked, so each sees every commit made
   * before it was asked). SQLite takes and drops its file locks once per transaction, which costs more
   * than the read of one row by key; a loaded server reads many records per turn. While turns hold one
   * such read each (light load), reads run at once instead, as `get` (waiting would only add a turn); a
   * turn with two or more of those turns batching back on.
   */
  getBatched<T = Record<string, unknown>>(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<T | null> {
    if (this.transactions.current()) return this.get<T>(sql, params);
    let readable: boolean;
    try {
      readable = this.readable(sql);
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
    if (!readable) return this.get<T>(sql, params);
    if (!this.batching) {
      if (this.directReads++ === 0) setImmediate(this.countDirectReads);
      return this.get<T>(sql, params);
    }
    return new Promise<T | null>((resolve, reject) => {
      if (this.pendingReads === null) {
        this.pendingReads = [];
        setImmediate(this.flushReads);
      }
      this.pendingReads.push({ sql, params, resolve: resolve as (row: unknown) => void, reject });
    });
  }

  /** Whether getBatched defers reads to the end of the turn (see there); the reads it ran at once in this turn. */
  private batching = false;
  private directReads = 0;

  private readonly countDirectReads = (): void => {
    if (this.directReads > 1) this.batching = true;
    this.directReads = 0;
  };

  private readonly flushReads = (): void => {
    const reads = this.pendingReads!;
    this.pendingReads = null;
    if (reads.length === 1) this.batching = false;
    const statements = this.readStatements;
    if (statements === null) {
      // Closed since they were asked.
      for (const r of reads) r.reject(new Error("database closed"));
      return;
    }
    let begun = false;
    if (reads.length > 1) {
      try {
        statements.get("BEGIN").run();
        begun = true;
      } catch {}
    }
    for (const r of reads) {
      try {
        // Each statement looked up as it runs (see StatementCache): one looked up earlier may be finalized by now.
        r.resolve(statements.get(r.sql).get(...(r.params as SqlValue[])) ?? null);
      } catch (err) {
        r.reject(mapSqliteError(err));
      }
    }
    if (!begun) return;
    try {
      statements.get("COMMIT").run();
    } catch {
      try {
        statements.get("ROLLBACK").run();
      } catch {}
    }
  };

  all<T = Record<string, unknown>>(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<T[]> {
    try {
      if (this.free()) return Promise.resolve(this.allNow<T>(sql, params));
      const read = this.readStatement(sql);
      if (!read) return this.queued(() => this.allNow<T>(sql, params));
      return Promise.resolve(read.all(...(params as SqlValue[])) as T[]);
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  /** Whether `sql` is a plain read and the reading connection exists (opened at first need). */
  private readable(sql: string): boolean {
    return (this.reader === undefined ? this.openReader() : this.reader) !== null && this.isPlainRead(sql);
  }

  /** The reading connection's statement for `sql` when readable, else null; to be run at once (see StatementCache). */
  private readStatement(sql: string): Statement | null {
    return this.readable(sql) ? this.readStatements!.get(sql) : null;
  }

  /** `readsOnly`, remembered by text. */
  private isPlainRead(sql: string): boolean {
    let reads = this.readKinds.get(sql);
    if (reads === undefined) {
      if (this.readKinds.size >= MAX_STATEMENTS) this.readKinds.clear();
      this.readKinds.set(sql, (reads = readsOnly(sql)));
    }
    return reads;
  }

  /** Opens the reading connection; without one (in-memory, not WAL, or it cannot be opened) reads wait for the writer. */
  private openReader(): Database | null {
    const file = this.sqlite.filename;
    this.reader = null;
    if (!file || file === ":memory:") return null;
    const mode = this.sqlite.prepare("PRAGMA journal_mode");
    const wal = (mode.get() as { journal_mode: string } | null)?.journal_mode === "wal";
    // Finalized at once: a statement left open would keep the connection from closing (and the WAL from going).
    mode.finalize();
    if (!wal) return null;
    let reader: Database | null = null;
    try {
      reader = new Database(file, { readonly: true, strict: true });
      reader.exec("PRAGMA busy_timeout = 5000");
      reader.exec("PRAGMA temp_store = MEMORY");
      reader.exec("PRAGMA cache_size = -32000");
    } catch {
      reader?.close();
      return null;
    }
    this.readStatements = new StatementCache(reader);
    return (this.reader = reader);
  }

  run(sql: string, params: readonly SqlValue[] = NO_PARAMS): Promise<RunResult> {
    if (!this.free()) return this.queued(() => this.runNow(sql, params));
    try {
      const result = this.runNow(sql, params);
      this.noteWrite();
      return Promise.resolve(result);
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  /** Notes that the transaction of this context (if any) changed the database (see TxState.writes; a statement that failed changed nothing: SQLite undid it). */
  private noteWrite(): void {
    const tx = this.transactions.current();
    if (tx) tx.writes++;
  }

  runEach(sql: string, rows: readonly (readonly SqlValue[])[], onRowError: (err: unknown, i: number) => unknown): Promise<void> {
    const each = () => {
      const statement = this.statement(sql);
      for (let i = 0; i < rows.length; i++) {
        try {
          statement.run(...(rows[i] as SqlValue[]));
        } catch (err) {
          if (i > 0) this.noteWrite();
          throw onRowError(mapSqliteError(err), i);
        }
      }
      if (rows.length) this.noteWrite();
    };
    if (!this.free()) return this.queued(each);
    try {
      each();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  exec(sql: string): Promise<void> {
    if (!this.free()) return this.queued(() => void this.sqlite.exec(sql));
    try {
      // Before: of several statements, those before a failing one stay.
      this.noteWrite();
      this.sqlite.exec(sql);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(mapSqliteError(err));
    }
  }

  /** Prepared statements by SQL text (see StatementCache), made at first use. */
  private statements: StatementCache | null = null;

  private statement(sql: string) {
    return (this.statements ??= new StatementCache(this.sqlite)).get(sql);
  }

  private getNow<T>(sql: string, params: readonly SqlValue[]): T | null {
    const row = (this.statement(sql).get(...(params as SqlValue[])) as T | null) ?? null;
    this.noteWriteOf(sql);
    return row;
  }

  private allNow<T>(sql: string, params: readonly SqlValue[]): T[] {
    const rows = this.statement(sql).all(...(params as SqlValue[])) as T[];
    this.noteWriteOf(sql);
    return rows;
  }

  /** noteWrite for a statement with rows that is not a plain read (an INSERT … RETURNING), run inside a transaction. */
  private noteWriteOf(sql: string): void {
    if (this.fileLock.locked && sql !== DATA_VERSION && !this.isPlainRead(sql)) this.noteWrite();
  }

  private runNow(sql: string, params: readonly SqlValue[]): RunResult {
    return { changes: this.statement(sql).run(...(params as SqlValue[])).changes };
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
    const l = this.fileLock;
    if (!l.locked) {
      l.locked = true;
      return;
    }
    return new Promise<void>((resolve) => l.waiters.push(resolve));
  }

  /** Hands the connection to the next waiter, in arrival order. */
  private unlock(): void {
    const l = this.fileLock;
    const next = l.waiters.shift();
    if (next) next();
    else l.locked = false;
  }

  /**
   * `data_version` changes whenever another connection commits (this process's own commits do not move it); it
   * is read on the writing connection without waiting for a transaction (see DATA_VERSION).
   */
  async changeMarks(): Promise<ChangeMarks> {
    return this.changeMarksNow();
  }

  changeMarksNow(): ChangeMarks {
    try {
      return { dataVersion: this.getNow<{ data_version: number }>(DATA_VERSION, NO_PARAMS)!.data_version };
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  async schemaVersion(): Promise<number> {
    const row = await this.get<{ value: string }>("SELECT value FROM _meta WHERE key = 'schema_version'");
    return row ? Number(row.value) : 0;
  }

  /** `VACUUM INTO` reads one snapshot (WAL), so writers go on meanwhile. */
  async backupTo(file: string): Promise<void> {
    await this.run("VACUUM INTO ?", [file]);
  }

  inTransaction(): boolean {
    return this.transactions.current() !== undefined;
  }

  transactionRun(): object | undefined {
    return this.transactions.transactionRun();
  }

  afterCommit(cb: () => void): void {
    this.transactions.afterCommit(cb);
  }

  async transaction<T>(fn: () => Promise<T>, opts?: TransactionOptions): Promise<T> {
    const nested = this.transactions.nested(fn);
    if (nested) return nested;
    const rerunnable = opts?.group === true;
    // Group commit: while this connection's write transaction runs, transactions that start join it and
    // run after it, each in a savepoint of its own (see commitGroup), and one COMMIT acknowledges them all.
    const group = this.group;
    if (group && group.members.length < MAX_GROUP) {
      return new Promise<T>((resolve, reject) => group.members.push({ fn, resolve: resolve as (v: unknown) => void, reject, rerunnable }));
    }
    const wait = this.lock();
    if (wait) await wait;
    return this.runGroup(fn, rerunnable);
  }

  /** Runs `first` as the first member of a new group (see commitGroup). Called holding the lock; releases it. */
  private async runGroup<T>(first: () => Promise<T>, rerunnable: boolean): Promise<T> {
    let own: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    await this.commitGroup({
      members: [{ fn: first, resolve: (value) => (own = { ok: true, value: value as T }), reject: (error) => (own = { ok: false, error }), rerunnable }],
    });
    if (!own) throw new Error("transaction ended");
    if (!own.ok) throw own.error;
    return own.value;
  }

  /**
   * Runs the group's members, and every transaction that joins meanwhile, in one SQLite transaction, then
   * commits once, at the end of the event-loop turn at the earliest (those that join until then run first).
   * Each member runs in its own savepoint, so that one that fails rolls back alone and gets its own error;
   * but a member that may run again (`rerunnable`, TransactionOptions.group) runs without one, which saves
   * SQLite a copy of every page it touches (see runMembers, startOver). Each member is answered, and its
   * after-commit callbacks run, only after the COMMIT; if the BEGIN or the COMMIT fails, every member that had
   * not failed by itself gets that failure. Called holding the lock; releases it.
   */
  private async commitGroup(group: Group): Promise<void> {
    const state: GroupRun = { run: {}, done: [], next: 0, careful: false };
    let commitError: unknown = null;
    try {
      this.control("BEGIN IMMEDIATE");
      this.group = group;
      for (let waited = false; ; waited = true) {
        await this.runMembers(group, state);
        // A server handles the requests of one event-loop turn one after the other, each to its end when it
        // needs no I/O: the COMMIT waits for the turn to end, so that their transactions join this one.
        if (waited || group.members.length >= MAX_GROUP) break;
        await nextTurn();
        if (state.next === group.members.length) break;
      }
      this.group = null;
      this.control("COMMIT");
    } catch (err) {
      commitError = mapSqliteError(err);
      try {
        if (this.sqlite.inTransaction) this.control("ROLLBACK");
      } catch {}
    } finally {
      this.group = null;
      for (const m of group.members.slice(state.next)) m.reject(commitError ?? new Error("transaction ended"));
      this.unlock();
    }
    if (commitError) for (const d of state.done) d.member.reject(commitError);
    else this.transactions.answer(state.done);
  }

  /**
   * Runs the members from `state.next` on, one after the other, each in an async context of its own: in a
   * savepoint that rolls back alone when it fails, or bare (see commitGroup). A bare member that fails having
   * changed nothing (its failing statement was undone by SQLite, a field check threw before any write) just
   * gets its error; one that fails after a change makes the transaction start over (startOver).
   */
  private async runMembers(group: Group, state: GroupRun): Promise<void> {
    for (; state.next < group.members.length; state.next++) {
      const member = group.members[state.next]!;
      const bare = member.rerunnable === true && !state.careful;
      if (!bare) this.control("SAVEPOINT member");
      const outcome = await this.transactions.runMember(member, newTxState(state.run), bare ? undefined : this.releaseMember);
      if (outcome.ok) {
        state.done.push(outcome);
        // A start over would run it again: from now on every member runs in a savepoint.
        if (!member.rerunnable) state.careful = true;
      } else if (!bare) {
        if (this.sqlite.inTransaction) {
          this.control("ROLLBACK TO member");
          this.control("RELEASE member");
        }
        member.reject(mapSqliteError(outcome.error));
      } else if (outcome.tx.writes === 0 && this.sqlite.inTransaction) {
        member.reject(mapSqliteError(outcome.error));
      } else this.startOver(group, state, member);
    }
  }

  /** Releases a member's savepoint after its run; the error when that fails (the member then fails). */
  private readonly releaseMember = (): unknown => {
    try {
      this.control("RELEASE member");
      return undefined;
    } catch (err) {
      return err;
    }
  };

  /**
   * A bare member failed after a change, which cannot be undone alone: the transaction rolls back and starts
   * over, with the members done so far and then that one, each in a savepoint now (so members run bare only
   * while every member done may run again).
   */
  private startOver(group: Group, state: GroupRun, member: SqliteMember): void {
    if (this.sqlite.inTransaction) this.control("ROLLBACK");
    this.control("BEGIN IMMEDIATE");
    state.run = {};
    group.members.splice(0, state.next + 1, ...state.done.map((d) => d.member), member);
    state.done = [];
    state.careful = true;
    state.next = -1;
  }

  /**
   * Holds this process's writes back while `during` runs: it starts once the write transaction running now
   * has committed, and no other starts until it ends. Reads go on meanwhile (on the reading connection), and
   * the transactions that start meanwhile gather in one group, which runs, and commits once, right after.
   * The checkpoint worker uses such a moment to copy the WAL's last frames, so that the next write starts the
   * WAL over from its beginning without the serving connection checkpointing (see checkpointer.ts).
   */
  async pauseWrites(during: () => Promise<void>): Promise<void> {
    const wait = this.lock();
    if (wait) await wait;
    const group: Group = { members: [] };
    this.group = group;
    try {
      await during();
    } finally {
      if (group.members.length > 0) void this.commitGroup(group);
      else {
        this.group = null;
        this.unlock();
      }
    }
  }

  async close(): Promise<void> {
    await this.lock();
    this.statements?.clear();
    try {
      this.sqlite.exec("PRAGMA optimize");
    } catch {}
    this.readStatements?.clear();
    this.readStatements = null;
    // Closed first: the writing connection, closing last, checkpoints and removes the WAL.
    this.reader?.close();
    this.reader = null;
    this.sqlite.close();
    this.unlock();
    if (--this.fileLock.engines === 0 && fileLocks.get(this.sqlite.filename) === this.fileLock) fileLocks.delete(this.sqlite.filename);
  }
}

/** The bun:sqlite handle under an engine (tests and benchmarks compare against it or inspect the file directly). */
export function rawDatabase(db: Engine): Database {
  if (!(db instanceof SqliteEngine)) throw new Error("not a SQLite engine");
  return db.sqlite;
}
