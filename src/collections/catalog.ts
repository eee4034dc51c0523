import type { Engine } from "../db/engine.ts";
import { externalChangeCounter, pgChangeMarks } from "./ddl.ts";
import type { AppContext } from "../context.ts";
import { notFound } from "../errors.ts";
import type { Collection, FieldDef, FieldRule, FtsState, IndexDef, Rules } from "./types.ts";

/**
 * In-memory cache of the `_collections` table. Another process (the CLI) may change the
 * table at any time; `PRAGMA data_version` (PostgreSQL: the snapshot, see pgChangeMarks) tells us
 * when anyone else committed, and `_meta.schema_version` whether it was a catalog change. The
 * question is asked at most once per event-loop turn (see refreshCatalog), not once per request.
 */
export interface Catalog {
  byName: Map<string, Collection>;
  schemaVersion: number;
  /**
   * Moves when another connection may have committed: SQLite's `data_version`; on PostgreSQL a number
   * of this process, bumped whenever the snapshot text differs from the last one seen. Caches of
   * data (counts) keep the value they were made under.
   */
  dataVersion: number;
  /** PostgreSQL: the snapshot text of the last check made outside a transaction. */
  snapshot?: string;
  /** The check against the database of the current turn, while it runs: later lookups of the turn wait for it. */
  checking?: Promise<void>;
  /** Set by every catalog write: the next read reloads from the database (also after a rollback). */
  stale: boolean;
  /** True while `inTransaction` runs its outer write transaction. */
  inWriteTx?: boolean;
  /** Checked against the database during the current write transaction (see refreshCatalog). */
  checkedInTx?: boolean;
  /** The event-loop turn and in-process commit count of the last check against the database. */
  checkedTurn: number;
  checkedCommits: number;
}

interface Row {
  name: string;
  rules: string;
  field_rules: string;
  fields: string;
  indexes: string;
  fts: string;
  created_at: number;
  updated_at: number;
}

export function createCatalog(): Catalog {
  return { byName: new Map(), schemaVersion: -1, dataVersion: -1, stale: true, checkedTurn: -1, checkedCommits: -1 };
}

// Event-loop turns, counted lazily: a turn ends when the immediate queued at its first check runs.
// Requests that arrive together are handled in one turn; any request that arrives after another
// process committed (the CLI, whose exit or reply reaches us as an event) starts a later turn.
let turn = 0;
let turnEndQueued = false;
function currentTurn(): number {
  if (!turnEndQueued) {
    turnEndQueued = true;
    setImmediate(() => {
      turn++;
      turnEndQueued = false;
    });
  }
  return turn;
}

// Write transactions committed by any connection of this process. Another connection in the same
// process (a second context, as tests and tools open one) may commit between two awaits of one turn:
// the next check then asks the database again.
let commitsInProcess = 0;

/**
 * Runs of PostgreSQL transactions whose catalog check is done (undefined) or on its way (its promise: the
 * members of a group that run side by side wait for the one check).
 */
const checkedRuns = new WeakMap<object, Promise<void> | undefined>();

/**
 * Notes a write transaction `ctx` committed (called by inTransaction), so every other context of this
 * process re-checks at its next read. Its own commit does not change what `ctx` has to learn.
 */
export function noteCommit(ctx: AppContext): void {
  const upToDate = ctx.catalog.checkedCommits === commitsInProcess;
  commitsInProcess++;
  if (upToDate) ctx.catalog.checkedCommits = commitsInProcess;
}

/**
 * Notes a PostgreSQL snapshot read outside a transaction: a text other than the last one seen means
 * a transaction committed since (anywhere), so the data version moves. A snapshot read inside a
 * transaction is left out: it may be older than one already noted, which would only drop counts for nothing.
 */
function noteSnapshot(ctx: AppContext, snapshot: string): void {
  const cat = ctx.catalog;
  if (ctx.db.inTransaction() || snapshot === cat.snapshot) return;
  cat.snapshot = snapshot;
  cat.dataVersion = Math.max(cat.dataVersion, 0) + 1;
}

async function readSchemaVersion(db: Engine): Promise<number> {
  const row = await db.get<{ value: string }>("SELECT value FROM _meta WHERE key = 'schema_version'");
  return row ? Number(row.value) : 0;
}

const readDataVersion = externalChangeCounter;

/** Turns a stored row into a catalog entry. */
export function collectionFromRow(row: Row): Collection {
  const fields = JSON.parse(row.fields) as FieldDef[];
  return {
    name: row.name,
    rules: JSON.parse(row.rules) as Rules,
    fieldRules: JSON.parse(row.field_rules) as FieldRule[],
    fields,
    fieldMap: new Map(fields.map((f) => [f.name.toLowerCase(), f])),
    indexes: JSON.parse(row.indexes) as IndexDef[],
    fts: JSON.parse(row.fts) as FtsState,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Reloads the whole catalog from the database. */
export async function reloadCatalog(ctx: AppContext): Promise<void> {
  const cat = ctx.catalog;
  // Cleared first: a catalog write committed while this reads (another request's transaction may
  // run between its statements) marks it stale again, and the next read reloads once more.
  cat.stale = false;
  try {
    // The versions are read before the rows: a change committed in between is then in the rows and
    // seen again at the next check (a second reload), never noted as loaded while missing.
    let schemaVersion: number;
    if (ctx.db.dialect === "postgres") {
      const marks = await pgChangeMarks(ctx.db);
      schemaVersion = marks.schemaVersion;
      noteSnapshot(ctx, marks.snapshot);
    } else {
      schemaVersion = await readSchemaVersion(ctx.db);
      cat.dataVersion = await readDataVersion(ctx.db);
    }
    const rows = await ctx.db.all<Row>("SELECT * FROM _collections ORDER BY name");
    cat.byName = new Map(rows.map((r) => [r.name.toLowerCase(), collectionFromRow(r)]));
    cat.schemaVersion = schemaVersion;
  } catch (err) {
    cat.stale = true;
    throw err;
  }
}

/**
 * Makes sure the cache reflects the database, reloading when this or another process changed it.
 * The database is asked at most once per event-loop turn (and once at the start of each write
 * transaction, which holds the write lock), so a CLI change is seen by the next request after it
 * commits without a statement on every request. Answers without a promise when no statement is needed.
 */
export function refreshCatalog(ctx: AppContext): Promise<void> | undefined {
  const cat = ctx.catalog;
  if (cat.stale) return reloadCatalog(ctx);
  // PostgreSQL: a transaction reads one snapshot, so one check per run of a transaction tells all it can
  // see (transactions of this process overlap there: each run is told apart by the engine, and the
  // transactions of a group, which share one, by their one PostgreSQL transaction).
  if (ctx.db.dialect === "postgres" && ctx.db.inTransaction()) {
    const run = ctx.db.transactionRun?.() ?? ctx.events.currentQueue();
    if (run) {
      if (checkedRuns.has(run)) return checkedRuns.get(run);
      const checking = checkDataVersion(ctx);
      checkedRuns.set(run, checking);
      checking.then(
        () => checkedRuns.set(run, undefined),
        () => {},
      );
      return checking;
    }
    // A transaction of the system tables alone (no record writes): a check of its own, which does not stand
    // for the turn's (that one reads its snapshot outside any transaction).
    return checkDataVersion(ctx);
  }
  // Inside our write transaction no other connection can commit, so one check per transaction
  // is enough (bulk inserts would otherwise ask SQLite several times per record).
  if (cat.checkedInTx) return;
  if (cat.inWriteTx) {
    cat.checkedInTx = true;
    return checkDataVersion(ctx);
  }
  const t = currentTurn();
  // Lookups of the turn whose check is still running wait for it: a request that arrived after another
  // process committed must not be answered from what was known before (a count, a collection).
  if (cat.checkedTurn === t && cat.checkedCommits === commitsInProcess) return cat.checking;
  cat.checkedTurn = t;
  cat.checkedCommits = commitsInProcess;
  const checking = checkDataVersion(ctx).finally(() => {
    if (cat.checking === checking) cat.checking = undefined;
  });
  cat.checking = checking;
  return checking;
}

/**
 * Makes the next lookup ask the database whether the catalog changed, even within this event-loop
 * turn: for work triggered by another node's notice, which may name what that node just created.
 */
export function recheckCatalog(ctx: AppContext): void {
  ctx.catalog.checkedTurn = -1;
}

async function checkDataVersion(ctx: AppContext): Promise<void> {
  const cat = ctx.catalog;
  // PostgreSQL: both versions in one statement (see pgChangeMarks).
  if (ctx.db.dialect === "postgres") {
    const marks = await pgChangeMarks(ctx.db);
    noteSnapshot(ctx, marks.snapshot);
    if (marks.schemaVersion !== cat.schemaVersion) await reloadCatalog(ctx);
    return;
  }
  const dv = await readDataVersion(ctx.db);
  if (dv === cat.dataVersion) return;
  const schemaVersion = await readSchemaVersion(ctx.db);
  // The version is noted once the catalog matches it (reloadCatalog notes its own): a check that runs
  // meanwhile must not take the old catalog for the new version.
  if (schemaVersion !== cat.schemaVersion) await reloadCatalog(ctx);
  else cat.dataVersion = dv;
}

// The lookups below answer at once when the cache is current (the common case within a request),
// and through a promise when the database has to be asked first; callers await either.

/** The collection of that name (case-insensitive), or undefined. */
export function findCollection(ctx: AppContext, name: string): Collection | undefined | Promise<Collection | undefined> {
  const pending = refreshCatalog(ctx);
  return pending ? pending.then(() => cached(ctx, name)) : cached(ctx, name);
}

/** The collection of that name, or 404. */
export function requireCollection(ctx: AppContext, name: string): Collection | Promise<Collection> {
  const pending = refreshCatalog(ctx);
  return pending ? pending.then(() => required(ctx, name)) : required(ctx, name);
}

/**
 * The collection as this process last knew it, asking the database only when nothing is cached. For work
 * on changes already committed (delivering realtime events), which must not cost a statement per event.
 */
export function knownCollection(ctx: AppContext, name: string): Collection | undefined | Promise<Collection | undefined> {
  const known = ctx.catalog.stale ? undefined : cached(ctx, name);
  return known ?? findCollection(ctx, name);
}

const cached = (ctx: AppContext, name: string) => ctx.catalog.byName.get(String(name).toLowerCase());

/**
 * The collection as this process last knew it, without asking the database (undefined when unknown or
 * the cache is stale): for work that checks the catalog again itself before it writes (a grouped create).
 */
export function lastKnownCollection(ctx: AppContext, name: string): Collection | undefined {
  return ctx.catalog.stale ? undefined : cached(ctx, name);
}

function required(ctx: AppContext, name: string): Collection {
  const c = cached(ctx, name);
  if (!c) throw notFound(`collection "${name}" not found`);
  return c;
}

/** All collections, by name. */
export async function listCollections(ctx: AppContext): Promise<Collection[]> {
  await refreshCatalog(ctx);
  return [...ctx.catalog.byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Marks a catalog change inside the current transaction: bumps the shared schema version, invalidates the cache. */
export async function touchCatalog(ctx: AppContext): Promise<void> {
  await ctx.db.run("INSERT INTO _meta (key, value) VALUES ('schema_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(_meta.value AS INTEGER) + 1 AS TEXT)");
  ctx.catalog.stale = true;
  // A read outside this transaction does not wait for it, and may reload the catalog from before the change
  // meanwhile: once it is committed, the next lookup reloads again.
  ctx.db.afterCommit(() => {
    ctx.catalog.stale = true;
  });
}

/**
 * Writes a collection's stored row (insert or replace) and invalidates the cache. Call it inside a
 * write transaction. Fields only ever grow, so fields already stored but missing from `c` are kept:
 * a caller holding a snapshot from before another process added a field must not drop it (the
 * column would stay, and the next value for it would fail as a duplicate column).
 */
export async function saveCollectionRow(ctx: AppContext, c: Omit<Collection, "fieldMap">): Promise<void> {
  const stored = await ctx.db.get<{ fields: string }>("SELECT fields FROM _collections WHERE name = ?", [c.name]);
  if (stored) {
    const known = JSON.parse(stored.fields) as FieldDef[];
    const given = new Set(c.fields.map((f) => f.name.toLowerCase()));
    if (known.some((f) => !given.has(f.name.toLowerCase()))) {
      const knownNames = new Set(known.map((f) => f.name.toLowerCase()));
      c = { ...c, fields: [...known, ...c.fields.filter((f) => !knownNames.has(f.name.toLowerCase()))] };
    }
  }
  await ctx.db.run(`INSERT INTO _collections (name, rules, field_rules, fields, indexes, fts, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET rules = excluded.rules, field_rules = excluded.field_rules,
         fields = excluded.fields, indexes = excluded.indexes, fts = excluded.fts, updated_at = excluded.updated_at`, [c.name, JSON.stringify(c.rules), JSON.stringify(c.fieldRules), JSON.stringify(c.fields), JSON.stringify(c.indexes), JSON.stringify(c.fts), c.createdAt, c.updatedAt]);
  await touchCatalog(ctx);
}

/** The public JSON shape of a collection (CONTRACT §2). */
export function collectionToJson(c: Collection) {
  return {
    name: c.name,
    rules: c.rules,
    field_rules: c.fieldRules,
    fields: c.fields.map((f) => ({ name: f.name, type: f.type })),
    indexes: c.indexes,
    fts: { enabled: c.fts.enabled, fields: c.fts.fields },
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}
