// The client is reached through Bun.SQL when an engine is made: importing it loads Bun's SQL module at start,
// about a tenth of a SQLite server's start-up, for nothing.
import type { SQL } from "bun";
import type { ChangeMarks, Engine, RunResult, SqlValue, TransactionOptions } from "./engine.ts";
import { MAX_GROUP, newTxState, Transactions, type Done, type Failed, type Member, type TxState } from "./group-commit.ts";
import { postgresDialect } from "./postgres-dialect.ts";
import { isRetryable, isUnavailable, mapPostgresError, sqlState } from "./postgres-errors.ts";
import { toPositional, type Positional } from "./pg-placeholders.ts";

/**
 * The PostgreSQL engine, on Bun's built-in client (no dependency). What callers see is what the SQLite
 * engine gives them:
 * - results: `boolean` as 1/0, every integer (`int8` too) and `numeric` as a number, `json`/`jsonb` as
 *   JSON text, `bytea` as Uint8Array, timestamps as epoch milliseconds;
 * - parameters: numbers, bigints and booleans (true → 1, false → 0) are sent untyped, so PostgreSQL types
 *   them from where they stand (as SQLite's dynamic typing does): 1 fits an integer and a boolean
 *   column alike. Where nothing gives a type (`SELECT ?`), cast in the SQL;
 * - transactions are SERIALIZABLE (SQLite's single writer is), retried whole on a serialization
 *   failure or deadlock;
 * - transactions that allow it (`group`) share one PostgreSQL transaction and its COMMIT (see runGroup).
 */

export interface PostgresEngineOptions {
  url: string;
  /** Connections in the pool (DB_POOL_SIZE). */
  poolSize?: number;
  /** Longest a statement may run, in ms; 0 = no limit (DB_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** Longest wait for a new connection, in seconds. */
  connectTimeoutS?: number;
  /** How often a whole transaction is run again after a serialization failure or deadlock. */
  maxRetries?: number;
  /** Hears an after-commit callback that threw (the commit stands; the other callbacks still run). */
  onCallbackError?: (err: unknown) => void;
}

type Reserved = Awaited<ReturnType<SQL["reserve"]>>;

/** A transaction of one async context on a reserved connection holding one open PostgreSQL transaction. */
interface Tx extends TxState {
  conn: Reserved;
  /** The failure that aborted the transaction (PostgreSQL then refuses every statement until a rollback). */
  abortedBy: unknown;
}

function newTx(conn: Reserved, run: object): Tx {
  return { ...newTxState(run), conn, abortedBy: undefined };
}

/** A transaction waiting to run in a group (see PostgresEngine.runGroup). */
interface PgMember extends Member {
  /** May run side by side with the members next to it that may too (TransactionOptions.independent). */
  independent: boolean;
}

/**
 * Groups running their members at the same time. A group's connection is free for the next one once its
 * COMMIT is sent; while the groups running are at this bound, transactions that start wait together
 * (a larger group, fewer statements and commits per transaction).
 */
const MAX_RUNNING_GROUPS = 2;

/** The state of a group's run (see runGroup). */
interface GroupRun {
  conn: Reserved;
  /** The run of the PostgreSQL transaction (Engine.transactionRun). */
  run: object;
  /** The members whose run succeeded: answered once the COMMIT succeeds. */
  done: Done<PgMember, Tx>[];
  /** Members to run again, each in a transaction of its own, once this one is over. */
  alone: PgMember[];
  /** Members to run again together, in a group of their own. */
  regroup: PgMember[];
  /** The transaction is open (it is rolled back at the end), and the connection fit to serve again. */
  open: boolean;
  healthy: boolean;
}

/** Why a group's transaction cannot commit (see runMembers): a member failed after a write, or with its statement refused. */
interface GroupFailure {
  /** The first such member, by position, and its failure. */
  at: number;
  error: unknown;
  /** A serialization failure or deadlock, which a transaction of its own retries. */
  retryable: boolean;
  /** It ran beside other members (which of them failed first cannot be told). */
  beside: boolean;
  /** Every member that failed so. */
  failures: Failed<PgMember, Tx>[];
  /** The members answered with their own failure, having written nothing. */
  refused: Set<PgMember>;
}

const OID = {
  text: 25,
  varchar: 1043,
  bool: 16,
  bytea: 17,
  int8: 20,
  json: 114,
  numeric: 1700,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  jsonb: 3802,
} as const;

type Converter = (v: unknown) => unknown;

// PostgreSQL text cannot hold a NUL character, which SQLite stores (and a client may send). Strings are
// stored with NUL written as ESC + "\uE002" and the escape character itself (a private-use character) as
// ESC + "\uE001", and read back decoded, so every engine returns what was stored. Only strings holding
// either character change; equality, LIKE and full text see the same encoding on both sides.
const ESC = "\uE000";

function encodeText(s: string): string {
  if (s.indexOf("\0") === -1 && s.indexOf(ESC) === -1) return s;
  return s.replace(/[\uE000\0]/g, (c) => (c === ESC ? ESC + "\uE001" : ESC + "\uE002"));
}

function decodeText(v: unknown): unknown {
  const s = v as string;
  if (s.indexOf(ESC) === -1) return s;
  return s.replace(/\uE000([\uE001\uE002])/g, (_, k: string) => (k === "\uE001" ? ESC : "\0"));
}

const converters: Record<number, Converter> = {
  [OID.text]: decodeText,
  [OID.varchar]: decodeText,
  [OID.bool]: (v) => (v ? 1 : 0),
  [OID.int8]: (v) => Number(v),
  [OID.numeric]: (v) => Number(v),
  [OID.json]: (v) => JSON.stringify(v),
  [OID.jsonb]: (v) => JSON.stringify(v),
  [OID.bytea]: (v) => new Uint8Array(v as Uint8Array),
  [OID.date]: (v) => (v as Date).getTime(),
  [OID.timestamp]: (v) => (v as Date).getTime(),
  [OID.timestamptz]: (v) => (v as Date).getTime(),
};

interface PgResult extends Array<Record<string, unknown>> {
  columns?: { name: string; type: number }[] | null;
  affectedRows?: number;
  count?: number;
  command?: string | null;
}

/** Converts the values of the columns whose type SQLite would return differently. */
function convertRows(rows: PgResult): Record<string, unknown>[] {
  const conversions = (rows.columns ?? []).flatMap((c) => (converters[c.type] ? [[c.name, converters[c.type]!] as const] : []));
  if (conversions.length === 0 || rows.length === 0) return rows;
  for (const row of rows) {
    for (const [name, convert] of conversions) {
      const v = row[name];
      if (v !== null && v !== undefined) row[name] = convert(v);
    }
  }
  return rows;
}

/** Gives the columns whose names a statement had to shorten the names it asked for, in their place. */
function renameColumns(rows: PgResult, renamed: Map<string, string>): void {
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    const out: Record<string, unknown> = {};
    for (const key in row) out[renamed.get(key) ?? key] = row[key];
    rows[r] = out;
  }
  for (const c of rows.columns ?? []) c.name = renamed.get(c.name) ?? c.name;
}

/** Parameters as the driver takes them: see the engine's comment for why numbers go untyped. */
function toDriverParams(params: readonly SqlValue[]): unknown[] {
  return params.map((p) => {
    if (typeof p === "number" || typeof p === "bigint") return String(p);
    if (typeof p === "boolean") return p ? "1" : "0";
    if (typeof p === "string") return encodeText(p);
    return p;
  });
}

/** Keeps the failed statement's text (never its values) on an error the engine does not map, for the log. */
function noteStatement(err: unknown, sql: string): void {
  if (err instanceof Error && !("statement" in err)) Object.defineProperty(err, "statement", { value: sql.slice(0, 1000), enumerable: false });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A statement as the driver gets it, and whether it only reads (a SELECT naming nothing that writes). */
interface Rewritten extends Positional {
  reads: boolean;
  /**
   * Whether it names a quoted identifier: every statement on a collection's table does (names are quoted
   * where the SQL is built); the system tables' own statements name them bare, and keep their text (and
   * their prepared statements) when a collection's table is dropped (see PostgresEngine.suffix).
   */
  quoted: boolean;
  /** `text` with the statement suffix it was last asked with (see PostgresEngine.suffix), and that suffix. */
  suffixed?: string;
  suffix?: string;
}

/** The text of a statement with the engine's suffix, made once per statement and suffix. */
function withSuffix(hit: Rewritten, suffix: string): string {
  if (hit.suffix !== suffix) {
    hit.suffixed = hit.text + suffix;
    hit.suffix = suffix;
  }
  return hit.suffixed!;
}

/** A table dropped, or a change the dialect counts as one (`_meta.table_drops`: a column dropped or renamed). */
const DROP_TABLE = /\bDROP\s+TABLE\b|'table_drops'/i;

/** Rewritten statements by their text: the same few hundred statements run again and again. */
const positional = new Map<string, Rewritten>();

function rewrite(sql: string): Rewritten {
  let hit = positional.get(sql);
  if (!hit) {
    // A bound on memory for SQL built with varying text (IN lists of any length).
    if (positional.size >= 2000) positional.clear();
    hit = {
      ...toPositional(sql),
      reads: /^\s*SELECT\b/i.test(sql) && !/\b(?:INSERT|UPDATE|DELETE|pg_notify|nextval|setval|FOR\s+UPDATE)\b/i.test(sql),
      quoted: sql.includes('"'),
    };
    positional.set(sql, hit);
  }
  return hit;
}

export class PostgresEngine implements Engine {
  readonly sql = postgresDialect;
  readonly groupBeginsAfterJoin = true;
  private readonly client: SQL;
  /** For the listening connections, each a client of its own (see listen). */
  private readonly url: string;
  private readonly connectTimeoutS: number;
  /** The transaction of each async context (see group-commit.ts). */
  private readonly transactions: Transactions<Tx>;
  private readonly maxRetries: number;
  private readonly onCallbackError: (err: unknown) => void;
  /**
   * Ends the text of every statement on a collection's table (Rewritten.quoted) once a table was dropped
   * (a comment naming the drops seen). The driver keeps a statement prepared on each connection under its
   * text, with the parameter types PostgreSQL inferred from the table then; a table dropped and made again
   * with a column of another type would get its values as the old type: an error (400, or a 500) or, worse,
   * text silently converted ("1e3" stored as "1000", "yes" as "true"). Under a new suffix such statements
   * are prepared afresh (one more round trip, once per connection); the old ones lie unused until their
   * connection closes.
   */
  private suffix = "";
  /** Tables dropped in the database (`_meta.table_drops`), as last seen; and by this engine's own DDL. */
  private dropsSeen = 0;
  private dropsHere = 0;

  constructor(opts: PostgresEngineOptions) {
    const statementTimeout = opts.statementTimeoutMs ?? 30_000;
    this.url = opts.url;
    this.connectTimeoutS = opts.connectTimeoutS ?? 5;
    this.maxRetries = opts.maxRetries ?? 10;
    this.onCallbackError = opts.onCallbackError ?? ((err) => console.error("after-commit callback failed", err));
    this.transactions = new Transactions<Tx>(
      {
        open: async (tx, name) => {
          const abortedBefore = tx.abortedBy;
          await tx.conn.unsafe(`SAVEPOINT ${name}`).catch((err) => {
            throw this.failIn(tx, err);
          });
          return abortedBefore;
        },
        release: async (tx, name) => {
          await tx.conn.unsafe(`RELEASE SAVEPOINT ${name}`);
        },
        undo: async (tx, name, abortedBefore) => {
          try {
            // Rolled back to the savepoint, the transaction is as it was before: usable again.
            await tx.conn.unsafe(`ROLLBACK TO SAVEPOINT ${name}`);
            await tx.conn.unsafe(`RELEASE SAVEPOINT ${name}`);
            tx.abortedBy = abortedBefore;
          } catch (rollbackErr) {
            // A lost connection leaves nothing to roll back to: the outer transaction fails as a whole.
            tx.abortedBy ??= rollbackErr;
          }
        },
        mapError: mapPostgresError,
      },
      this.onCallbackError,
    );
    this.client = new Bun.SQL({
      url: opts.url,
      max: opts.poolSize ?? 10,
      bigint: true,
      idleTimeout: 30,
      // Statements prepared before a collection's table was dropped stay on their connection, unused (see
      // suffix): a connection is replaced after 10 minutes, so they do not pile up on a busy server.
      maxLifetime: 600,
      connectionTimeout: this.connectTimeoutS,
      connection: { statement_timeout: statementTimeout, application_name: "baas" },
    });
  }

  /**
   * The open transaction of the current async context, if any. A statement left running by a transaction
   * that has ended (a promise it did not await) runs on its own, as on the SQLite engine.
   */
  private currentTx(): Tx | undefined {
    return this.transactions.current();
  }

  private async query(sql: string, params: readonly SqlValue[] = []): Promise<PgResult> {
    const hit = rewrite(sql);
    const { count, renamed, reads } = hit;
    const text = this.suffix && hit.quoted ? withSuffix(hit, this.suffix) : hit.text;
    if (count !== params.length) throw new Error(`the statement has ${count} placeholders but ${params.length} values were given`);
    const tx = this.currentTx();
    for (let attempt = 0; ; attempt++) {
      try {
        if (tx && !reads) tx.writes++;
        const rows = (await (tx?.conn ?? this.client).unsafe(text, toDriverParams(params))) as PgResult;
        if (renamed && rows.length) renameColumns(rows, renamed);
        return rows;
      } catch (err) {
        noteStatement(err, sql);
        if (tx) throw this.failIn(tx, err);
        // A statement of its own is a whole transaction: a deadlock victim may run again.
        if (isRetryable(err) && attempt < this.maxRetries) {
          await sleep(backoff(attempt));
          continue;
        }
        throw mapPostgresError(err);
      }
    }
  }

  async get<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T | null> {
    const rows = convertRows(await this.query(sql, params));
    return (rows[0] as T | undefined) ?? null;
  }

  async all<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return convertRows(await this.query(sql, params)) as T[];
  }

  async run(sql: string, params?: readonly SqlValue[]): Promise<RunResult> {
    const res = await this.query(sql, params);
    return { changes: res.affectedRows ?? res.count ?? 0 };
  }

  /** The snapshot text of the last changeMarks outside a transaction, and the count of the texts seen (ChangeMarks.dataVersion). */
  private snapshotSeen: string | undefined;
  private snapshots = 0;
  /** The schema version the last catalog check read (see readMarks). */
  private versionSeen: number | undefined;

  /**
   * The catalog's marks in one statement: its version (`_meta.schema_version`) and the text of the statement's
   * snapshot (`pg_current_snapshot()`: the oldest transaction still running, one past the newest finished, and
   * those running between). A transaction that writes gets an id, and its end changes that text; reads get none.
   * So two equal texts mean no transaction committed anywhere in between (no node, no CLI command), and any commit
   * makes every later text differ from every earlier one. A snapshot read inside a transaction is left out: it may
   * be older than one already noted, which would only drop counts for nothing.
   */
  async changeMarks(): Promise<ChangeMarks> {
    const marks = await this.readMarks();
    if (!this.inTransaction() && marks.snapshot !== this.snapshotSeen) {
      this.snapshotSeen = marks.snapshot;
      this.snapshots++;
    }
    return { dataVersion: this.snapshots, schemaVersion: marks.schemaVersion };
  }

  async schemaVersion(): Promise<number> {
    return (await this.readMarks()).schemaVersion;
  }

  /**
   * Reads the marks (see changeMarks). When the version moved, it also learns the count of dropped tables (see
   * suffix), before the request's statements touch a table.
   */
  private async readMarks(): Promise<{ schemaVersion: number; snapshot: string }> {
    // The key is a parameter so that the driver prepares the statement once per connection: a statement
    // without parameters goes by the simple protocol, parsed and planned every time (three times the CPU).
    const row = (await this.get<{ v: string | null; s: string }>("SELECT (SELECT value FROM _meta WHERE key = ?) AS v, CAST(pg_current_snapshot() AS text) AS s", ["schema_version"]))!;
    const schemaVersion = row.v === null ? 0 : Number(row.v);
    // A collection's table is dropped only with the collection, which bumps the version in the same
    // transaction: the count is read (inside a transaction, in the same snapshot) only when the version moved.
    // A version seen inside a transaction is not noted as seen: it may be the transaction's own, rolled back
    // later, and another process's next change would then bring the same number.
    if (this.versionSeen !== schemaVersion) {
      const drops = await this.get<{ value: string }>("SELECT value FROM _meta WHERE key = ?", ["table_drops"]);
      this.noteTableDrops(drops ? Number(drops.value) : 0);
      if (!this.inTransaction()) this.versionSeen = schemaVersion;
    }
    return { schemaVersion, snapshot: row.s };
  }

  /**
   * How many collection tables were ever dropped in the database (`_meta.table_drops`). A number larger than
   * the last one seen gives every statement a name of its own, so none runs prepared against a table another
   * process dropped and made again.
   */
  private noteTableDrops(count: number): void {
    // Only forward: a check that read an older snapshot must not bring back names prepared before a drop.
    if (!(count > this.dropsSeen)) return;
    this.dropsSeen = count;
    this.renameStatements();
  }

  private renameStatements(): void {
    this.suffix = ` /* d${this.dropsSeen}.${this.dropsHere} */`;
  }

  async exec(sql: string): Promise<void> {
    // Renamed before the drop is sent: no statement of this process runs prepared against the old table after it.
    if (DROP_TABLE.test(sql)) {
      this.dropsHere++;
      this.renameStatements();
    }
    const tx = this.currentTx();
    try {
      if (tx) tx.writes++;
      await (tx?.conn ?? this.client).unsafe(toPositional(sql, false).text).simple();
    } catch (err) {
      noteStatement(err, sql);
      throw tx ? this.failIn(tx, err) : mapPostgresError(err);
    }
  }

  /**
   * Records the failure that aborted `tx` and returns the error to throw: the first failure again for a
   * statement refused because of it (25P02), so the caller learns what actually went wrong.
   */
  private failIn(tx: Tx, err: unknown): unknown {
    if (sqlState(err) === "25P02" && tx.abortedBy) return mapPostgresError(tx.abortedBy);
    tx.abortedBy ??= err;
    return mapPostgresError(err);
  }

  inTransaction(): boolean {
    return this.currentTx() !== undefined;
  }

  afterCommit(cb: () => void): void {
    this.transactions.afterCommit(cb);
  }

  transaction<T>(fn: () => Promise<T>, opts?: TransactionOptions): Promise<T> {
    const nested = this.transactions.nested(fn);
    if (nested) return nested;
    if (opts?.group) return this.joinGroup(fn, opts.independent === true);
    return this.outermost(fn);
  }

  transactionRun(): object | undefined {
    return this.transactions.transactionRun();
  }

  /** Groups formed and waiting for a turn to run (each at most MAX_GROUP long), oldest first. */
  private readonly waiting: PgMember[][] = [];
  private runningGroups = 0;
  private startQueued = false;

  /**
   * Group commit: a transaction that allows it waits with the others of its kind that start before a group
   * is free to run (the rest of the event-loop turn at least), and runs with them in one PostgreSQL
   * transaction. A group starts its transaction only once its members have joined, so every member sees
   * every commit made before it started, as a transaction of its own would.
   */
  private joinGroup<T>(fn: () => Promise<T>, independent: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const member: PgMember = { fn, resolve: resolve as (v: unknown) => void, reject, independent };
      const last = this.waiting[this.waiting.length - 1];
      if (last && last.length < MAX_GROUP) last.push(member);
      else this.waiting.push([member]);
      if (!this.startQueued) {
        this.startQueued = true;
        setImmediate(() => {
          this.startQueued = false;
          this.startGroups();
        });
      }
    });
  }

  private startGroups(): void {
    while (this.runningGroups < MAX_RUNNING_GROUPS && this.waiting.length) {
      const members = this.waiting.shift()!;
      this.runningGroups++;
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        this.runningGroups--;
        this.startGroups();
      };
      void this.runGroup(members, free).finally(free);
    }
  }

  /**
   * Runs the members one after the other in one PostgreSQL transaction (consecutive independent members
   * side by side, their statements pipelined), without savepoints (two round trips each), and commits
   * once: each member is answered, and its after-commit callbacks run, only after that COMMIT. A member
   * that fails having written nothing (reads that succeeded leave nothing to undo) just gets its error.
   * One that fails after a write, or whose statement failed (a unique violation aborts the transaction; a
   * write before a failure must not stay), rolls the whole transaction back (see sortFailures). A COMMIT the
   * server refuses (nothing was committed) also sends the members to transactions of their own; a COMMIT
   * whose outcome is unknown (the connection was lost) fails them all. `free` lets the next group start,
   * once the COMMIT is sent.
   */
  private async runGroup(members: PgMember[], free: () => void): Promise<void> {
    if (members.length === 1) {
      const only = members[0]!;
      await this.outermost(only.fn).then(only.resolve, only.reject);
      return;
    }
    let conn: Reserved;
    try {
      conn = await this.client.reserve();
    } catch (err) {
      const error = mapPostgresError(err);
      for (const m of members) m.reject(error);
      return;
    }
    const g: GroupRun = { conn, run: {}, done: [], alone: [], regroup: [], open: false, healthy: true };
    try {
      if (!(await this.beginGroup(g))) {
        // Nothing ran: each member tries on a connection of its own (this one may have been lost).
        g.alone = members;
        return;
      }
      const failure = await this.runMembers(g, members);
      if (failure) return this.sortFailures(g, members, failure);
      free();
      await this.commitGroup(g);
    } catch (err) {
      // The COMMIT's outcome is unknown (the connection was lost): every member that was waiting for it fails.
      g.healthy = false;
      const error = mapPostgresError(err);
      for (const d of g.done) d.member.reject(error);
      g.done.length = 0;
    } finally {
      await this.finishGroup(g, free);
    }
  }

  /** BEGIN on the group's connection; false when it failed (the connection is then not reused). */
  private async beginGroup(g: GroupRun): Promise<boolean> {
    try {
      await g.conn.unsafe("BEGIN ISOLATION LEVEL SERIALIZABLE");
      g.open = true;
      return true;
    } catch {
      g.healthy = false;
      return false;
    }
  }

  /**
   * Runs the members in the group's transaction, a run of independent ones side by side and any other by itself,
   * until one fails having written (or with its statement refused): the transaction can then not commit. The
   * members that succeed go to `g.done`; one that fails having written nothing is answered with its error.
   */
  private async runMembers(g: GroupRun, members: PgMember[]): Promise<GroupFailure | null> {
    let failure: GroupFailure | null = null;
    const refused = new Set<PgMember>();
    const run = (m: PgMember) => this.transactions.runMember(m, newTx(g.conn, g.run), (tx) => tx.abortedBy);
    for (let i = 0; i < members.length && !failure; ) {
      let end = i + 1;
      if (members[i]!.independent) while (end < members.length && members[end]!.independent) end++;
      const outcomes = end - i === 1 ? [await run(members[i]!)] : await Promise.all(members.slice(i, end).map(run));
      for (let k = 0; k < outcomes.length; k++) {
        const o = outcomes[k]!;
        if (o.ok) g.done.push(o);
        else if (o.tx.writes === 0 && !o.tx.abortedBy) {
          o.member.reject(mapPostgresError(o.error));
          refused.add(o.member);
        } else {
          failure ??= { at: i + k, error: o.error, retryable: retryableFailure(o.error, o.tx), beside: outcomes.length > 1, failures: [], refused };
          failure.failures.push(o);
        }
      }
      i = end;
    }
    return failure;
  }

  /**
   * After a failure that dooms the group's transaction (rolled back by finishGroup), decides how each member
   * still unanswered runs again, so that each gets exactly the answer it would have had alone. Alone in the
   * transaction so far, a member's failure is the one it would have had alone (a serialization failure aside,
   * which a transaction of its own retries). With members beside it, what failed first cannot be told: every
   * member that sent a statement runs again.
   */
  private sortFailures(g: GroupRun, members: PgMember[], failure: GroupFailure): void {
    const { refused } = failure;
    if (g.done.length === 0 && !failure.retryable && !failure.beside) {
      members[failure.at]!.reject(mapPostgresError(failure.error));
      refused.add(members[failure.at]!);
    }
    // The members that failed of their own (not refused only because the transaction was already aborted,
    // 25P02) run again alone: their failure may have come from another member's write. The others did nothing
    // wrong and form a new group, so one conflict does not cost every member a transaction of its own.
    const guilty = new Set(failure.failures.filter((o) => !refused.has(o.member) && sqlState(o.tx.abortedBy ?? o.error) !== "25P02").map((o) => o.member));
    const rest = members.filter((m) => !refused.has(m) && !guilty.has(m));
    if (guilty.size === 0) g.alone = rest;
    else {
      g.alone = [...guilty];
      g.regroup = rest;
    }
    g.done.length = 0;
  }

  /**
   * COMMIT of the group's transaction. Refused by the server, the transaction is rolled back (nothing of it was
   * kept): the members run again alone, or, one alone and not to be retried, get the refusal. Throws when the
   * outcome is unknown.
   */
  private async commitGroup(g: GroupRun): Promise<void> {
    g.open = false;
    let ended: PgResult;
    try {
      ended = (await g.conn.unsafe("COMMIT")) as PgResult;
    } catch (err) {
      if (sqlState(err) && !isUnavailable(err)) {
        if (g.done.length > 1 || isRetryable(err)) g.alone = g.done.map((d) => d.member);
        else for (const d of g.done) d.member.reject(mapPostgresError(err));
        g.done.length = 0;
        return;
      }
      throw err;
    }
    if (ended.command === "ROLLBACK") throw new Error("the transaction was rolled back by the database");
  }

  /**
   * Ends a group's run: rolls back a transaction left open, gives the connection back (or closes it), lets the
   * next group start, answers the committed members (their callbacks running outside the transaction's context,
   * in order), and sends the others to run again.
   */
  private async finishGroup(g: GroupRun, free: () => void): Promise<void> {
    if (g.open) await g.conn.unsafe("ROLLBACK").catch(() => (g.healthy = false));
    if (g.healthy) g.conn.release();
    else g.conn.close().catch(() => {});
    free();
    this.transactions.answer(g.done);
    for (const m of g.alone) this.outermost(m.fn).then(m.resolve, m.reject);
    if (g.regroup.length === 1) this.outermost(g.regroup[0]!.fn).then(g.regroup[0]!.resolve, g.regroup[0]!.reject);
    else if (g.regroup.length > 1) {
      this.waiting.unshift(g.regroup);
      this.startGroups();
    }
  }

  /** The outermost transaction on a reserved connection, run again whole on a serialization failure. */
  private async outermost<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let conn: Reserved;
      try {
        conn = await this.client.reserve();
      } catch (err) {
        throw mapPostgresError(err);
      }
      const tx = newTx(conn, {});
      let healthy = true;
      let result: T;
      try {
        await conn.unsafe("BEGIN ISOLATION LEVEL SERIALIZABLE");
        result = await this.transactions.runIn(tx, fn);
        // COMMIT of a transaction that a failed statement aborted rolls back without an error: never
        // report such a transaction as saved (on SQLite the other writes would have been kept).
        const done = (await conn.unsafe("COMMIT")) as PgResult;
        if (done.command === "ROLLBACK") throw tx.abortedBy ?? new Error("the transaction was rolled back by the database");
      } catch (err) {
        await conn.unsafe("ROLLBACK").catch(() => {
          healthy = false;
        });
        // A serialization failure dooms the whole try, whatever `fn` made of it: run it again.
        if (retryableFailure(err, tx) && attempt < this.maxRetries) {
          await sleep(backoff(attempt));
          continue;
        }
        throw mapPostgresError(err);
      } finally {
        tx.open = false;
        if (healthy) conn.release();
        else conn.close().catch(() => {});
      }
      // Committed: the callbacks run outside the transaction's context, in the order they were queued.
      this.transactions.runCallbacks(tx.afterCommit);
      return result;
    }
  }

  /**
   * Listens on `channel` on a connection of its own (Engine.listen). Bun's `sql.listen` reconnects a lost listening
   * connection on a schedule of its own (seconds to tens of seconds after the database is back), and says nothing
   * meanwhile; so each listener has a client of its own, whose `onclose` tells at once that the connection is
   * gone: `onLost` runs, that client is closed (no reconnect of Bun's), and a new one listens again after
   * LISTEN_RETRY_MS (growing to LISTEN_RETRY_MAX_MS between tries), then `onListen` runs again. A callback that
   * throws is reported, never fatal.
   */
  async listen(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
    onLost?: (err: unknown) => void,
  ): Promise<() => Promise<void>> {
    const guard = (fn: () => void) => {
      try {
        fn();
      } catch (err) {
        this.onCallbackError(err);
      }
    };
    const l: Listening = { client: null, stopped: false, timer: undefined };
    const relisten = (attempt: number) => {
      l.timer = setTimeout(() => {
        l.timer = undefined;
        this.listenOnce(l, channel, onNotify, onLost, guard).then(
          () => !l.stopped && onListen && guard(onListen),
          () => l.stopped || relisten(attempt + 1),
        );
      }, listenRetryDelay(attempt));
    };
    l.relisten = () => relisten(0);
    try {
      await this.listenOnce(l, channel, onNotify, onLost, guard);
    } catch (err) {
      throw mapPostgresError(err);
    }
    if (onListen) guard(onListen);
    return async () => {
      l.stopped = true;
      clearTimeout(l.timer);
      const client = l.client;
      l.client = null;
      await client?.close({ timeout: 1 }).catch(() => {});
    };
  }

  /** One listening connection of `l` (see listen): resolves once the server acknowledged the LISTEN. */
  private async listenOnce(
    l: Listening,
    channel: string,
    onNotify: (payload: string) => void,
    onLost: ((err: unknown) => void) | undefined,
    guard: (fn: () => void) => void,
  ): Promise<void> {
    let acknowledged = false;
    let closed: { err: unknown } | null = null;
    const lose = (err: unknown) => {
      if (l.stopped || l.client !== client) return;
      l.client = null;
      client.close({ timeout: 0 }).catch(() => {});
      if (onLost) guard(() => onLost(err));
      l.relisten?.();
    };
    const client: SQL = new Bun.SQL({
      url: this.url,
      max: 1,
      connectionTimeout: this.connectTimeoutS,
      connection: { application_name: "baas listener" },
      onclose: (err) => {
        if (closed) return;
        closed = { err };
        // Before the LISTEN is acknowledged, a close is the try's own failure (listen rejects).
        if (acknowledged) lose(err);
      },
    });
    l.client = client;
    try {
      await client.listen(channel, (payload) => guard(() => onNotify(decodeText(payload) as string)));
    } catch (err) {
      if (l.client === client) l.client = null;
      await client.close({ timeout: 0 }).catch(() => {});
      throw err;
    }
    acknowledged = true;
    if (l.stopped) await client.close({ timeout: 0 }).catch(() => {});
    // Closed between the acknowledgement and now: lost already.
    else if (closed) queueMicrotask(() => lose((closed as { err: unknown }).err));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** A serialization failure or deadlock doomed the transaction, whatever its function made of it (it may have thrown something else). */
function retryableFailure(err: unknown, tx: Tx): boolean {
  return isRetryable(err) || isRetryable((err as { cause?: unknown } | null)?.cause) || isRetryable(tx.abortedBy);
}

/** A listener's state (PostgresEngine.listen): its client while it listens, its next try while it does not. */
interface Listening {
  client: SQL | null;
  stopped: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Starts the tries to listen again, after a lost connection. */
  relisten?: () => void;
}

/**
 * The first try to listen again comes this soon after a connection is lost; the pause doubles up to
 * LISTEN_RETRY_MAX_MS, so a listener is back at most that long after the database answers again. A try on a
 * database that is down costs a refused connection.
 */
export const LISTEN_RETRY_MS = 50;
export const LISTEN_RETRY_MAX_MS = 500;

function listenRetryDelay(attempt: number): number {
  return Math.min(LISTEN_RETRY_MAX_MS, LISTEN_RETRY_MS * 2 ** attempt);
}

/** Milliseconds to wait before another try: growing, with jitter so two losers do not meet again. */
function backoff(attempt: number): number {
  return Math.min(200, 5 * 2 ** attempt) * (0.5 + Math.random());
}

/** Opens the PostgreSQL engine (the pool connects on first use). */
export function openPostgres(opts: PostgresEngineOptions): PostgresEngine {
  return new PostgresEngine(opts);
}
