import type { AppContext } from "../context.ts";
import { AppError, notFound } from "../errors.ts";
import { fieldToJson } from "./field-types.ts";
import type { Collection, FieldDef, FieldRule, FtsState, IndexDef, Rules } from "./types.ts";

/**
 * The collections as lookups see them. The shared view (the Catalog itself) holds only what is committed:
 * requests that are not inside a write transaction read it. A write transaction that changes the catalog
 * (a new field, a relation) gets a view of its own (see refreshTxView), with its uncommitted changes, which no other
 * request sees and which is dropped with the transaction.
 */
export interface CatalogView {
  byName: Map<string, Collection>;
  schemaVersion: number;
  /** Set when the view may differ from the database: the next lookup reloads it. */
  stale: boolean;
  /** The check or reload of this view that is running: lookups wait for it. */
  checking?: Promise<void>;
}

/**
 * In-memory cache of the `_collections` table. Another process (the CLI, another node) may change the
 * table at any time; the engine's change marks (Engine.changeMarks) tell us when anyone else committed,
 * and `_meta.schema_version` whether it was a catalog change. The question is asked at most once per
 * event-loop turn (see refreshCatalog), not once per request.
 */
export interface Catalog extends CatalogView {
  /** The engine's data version (ChangeMarks.dataVersion) as of the last check. Caches of data (counts) keep the value they were made under. */
  dataVersion: number;
  /** The event-loop turn and in-process commit count of the last check against the database. */
  checkedTurn: number;
  checkedCommits: number;
  /** The views of the write transactions running, by their run (Engine.transactionRun). */
  txViews: WeakMap<object, CatalogView>;
  /** The reload of the shared view running (see reloadCatalog): lookups wait for it. */
  reloading?: Promise<void>;
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
  return { byName: new Map(), schemaVersion: -1, dataVersion: -1, stale: true, checkedTurn: -1, checkedCommits: -1, txViews: new WeakMap() };
}

// Event-loop turns. Requests are dispatched in the loop's I/O phase, one after the other: a turn begins at
// the first request of that phase (noteRequest), and ends when the immediate it queued runs, after the phase.
// A turn begun by a lookup outside a request's dispatch (in an immediate, a timer: the continuation of a
// batched read or a group commit) ends at the next request's dispatch, which may come in the next I/O
// phase, before that immediate: a request that arrives after another process committed never reuses a
// check made before it arrived.
let turn = 0;
let turnEndQueued = false;
let turnByRequest = false;
const endTurn = () => {
  turn++;
  turnEndQueued = false;
  turnByRequest = false;
};
function queueTurnEnd(): void {
  if (turnEndQueued) return;
  turnEndQueued = true;
  setImmediate(endTurn);
}

/** Called at the dispatch of every request (see fast-read.ts): its lookups share the check of its I/O phase's turn. */
export function noteRequest(): void {
  if (turnByRequest && turnEndQueued) return;
  turn++;
  turnByRequest = true;
  queueTurnEnd();
}

function currentTurn(): number {
  queueTurnEnd();
  return turn;
}

// Write transactions committed by any connection of this process. Another connection in the same
// process (a second context, as tests and tools open one) may commit between two awaits of one turn:
// the next check then asks the database again.
let commitsInProcess = 0;

/**
 * Notes a write transaction `ctx` committed (called by inTransaction), so every other context of this
 * process re-checks at its next read. Its own commit does not change what `ctx` has to learn.
 */
export function noteCommit(ctx: AppContext): void {
  const upToDate = ctx.catalog.checkedCommits === commitsInProcess;
  commitsInProcess++;
  if (upToDate) ctx.catalog.checkedCommits = commitsInProcess;
}

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

/** Reads every collection row. */
async function readCollections(ctx: AppContext): Promise<Map<string, Collection>> {
  const rows = await ctx.db.all<Row>("SELECT * FROM _collections ORDER BY name");
  return new Map(rows.map((r) => [r.name.toLowerCase(), collectionFromRow(r)]));
}

/**
 * Reloads the shared view from what is committed. Call it outside a transaction. One reload runs at a time
 * (a later one could otherwise finish first, and the earlier one put back what it read); one asked for while
 * another runs waits for it, then runs again if the view was marked stale meanwhile (a commit it may predate).
 */
export function reloadCatalog(ctx: AppContext): Promise<void> {
  const cat = ctx.catalog;
  if (cat.reloading) return cat.reloading.then(() => (cat.stale ? reloadCatalog(ctx) : undefined));
  const reloading = loadShared(ctx).finally(() => {
    cat.reloading = undefined;
  });
  cat.reloading = reloading;
  return reloading;
}

async function loadShared(ctx: AppContext): Promise<void> {
  const cat = ctx.catalog;
  // Cleared first: a catalog write committed while this reads (another request's transaction may
  // run between its statements) marks it stale again, and the next read reloads once more.
  cat.stale = false;
  try {
    // The versions are read before the rows: a change committed in between is then in the rows and
    // seen again at the next check (a second reload), never noted as loaded while missing.
    const marks = await ctx.db.changeMarks();
    const schemaVersion = marks.schemaVersion ?? (await ctx.db.schemaVersion());
    cat.dataVersion = marks.dataVersion;
    cat.byName = await readCollections(ctx);
    cat.schemaVersion = schemaVersion;
  } catch (err) {
    cat.stale = true;
    throw err;
  }
}

/** The view of the write transaction this async context runs, if it has one yet. */
function txViewOf(ctx: AppContext): CatalogView | undefined {
  const run = ctx.db.transactionRun();
  return run && ctx.catalog.txViews.get(run);
}

/** The view lookups of this async context read: its write transaction's, else the shared one. */
export function catalogView(ctx: AppContext): CatalogView {
  return txViewOf(ctx) ?? ctx.catalog;
}

/**
 * Brings the view of a write transaction (`run`) up to date. The first lookup of a transaction makes its
 * view, from the shared one, and asks the database once (inside the transaction, which on SQLite holds
 * the write lock: no other connection can commit until it ends; on PostgreSQL, what its snapshot shows)
 * whether the catalog changed since; the transaction's own changes (touchCatalog) and rolled-back
 * savepoints (markTxCatalogStale) make it read the catalog again, through the transaction.
 */
function refreshTxView(ctx: AppContext, run: object): Promise<void> | undefined {
  const cat = ctx.catalog;
  let view = cat.txViews.get(run);
  if (view) {
    if (view.checking || !view.stale) return view.checking;
  } else {
    view = { byName: cat.byName, schemaVersion: cat.stale ? -1 : cat.schemaVersion, stale: false };
    cat.txViews.set(run, view);
  }
  const v = view;
  const checking = (async () => {
    const stale = v.stale;
    v.stale = false;
    const schemaVersion = await ctx.db.schemaVersion();
    if (stale || schemaVersion !== v.schemaVersion) {
      v.byName = await readCollections(ctx);
      v.schemaVersion = schemaVersion;
    }
  })().then(
    () => {
      v.checking = undefined;
    },
    (err) => {
      v.checking = undefined;
      v.stale = true;
      throw err;
    },
  );
  v.checking = checking;
  return checking;
}

/**
 * Makes sure the view this async context reads reflects the database. Outside a write transaction: the
 * shared view is checked at most once per event-loop turn (see noteRequest), so a CLI change is seen by
 * the next request after it commits without a statement on every request. Inside one: see refreshTxView.
 * Answers without a promise when no statement is needed.
 */
export function refreshCatalog(ctx: AppContext): Promise<void> | undefined {
  const run = ctx.db.transactionRun();
  if (run) return refreshTxView(ctx, run);
  const cat = ctx.catalog;
  // A lookup during a reload waits for it: what the view holds meanwhile may predate a commit it must see.
  if (cat.reloading) return cat.reloading.then(() => refreshCatalog(ctx));
  if (cat.stale) return reloadCatalog(ctx);
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

/**
 * Makes the running write transaction read the catalog again at its next lookup: a savepoint of it rolled
 * back, maybe with catalog changes. Outside a transaction it does nothing (the shared view holds only
 * what is committed).
 */
export function markTxCatalogStale(ctx: AppContext): void {
  const view = txViewOf(ctx);
  if (view) view.stale = true;
}

async function checkDataVersion(ctx: AppContext): Promise<void> {
  const cat = ctx.catalog;
  const marks = await ctx.db.changeMarks();
  if (marks.dataVersion === cat.dataVersion) return;
  // PostgreSQL reads both versions in one statement; SQLite the schema version only when the data moved.
  const schemaVersion = marks.schemaVersion ?? (await ctx.db.schemaVersion());
  // The version is noted once the catalog matches it (reloadCatalog notes its own): a check that runs
  // meanwhile must not take the old catalog for the new version.
  if (schemaVersion !== cat.schemaVersion) await reloadCatalog(ctx);
  else cat.dataVersion = marks.dataVersion;
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

const cached = (ctx: AppContext, name: string) => catalogView(ctx).byName.get(String(name).toLowerCase());

/**
 * The collection as this process last knew it, without asking the database (undefined when unknown or
 * the cache is stale): for work that checks the catalog again itself before it writes (a grouped create).
 */
export function lastKnownCollection(ctx: AppContext, name: string): Collection | undefined {
  return catalogView(ctx).stale ? undefined : cached(ctx, name);
}

function required(ctx: AppContext, name: string): Collection {
  const c = cached(ctx, name);
  if (!c) throw notFound(`collection "${name}" not found`);
  return c;
}

/** All collections, by name. */
export async function listCollections(ctx: AppContext): Promise<Collection[]> {
  await refreshCatalog(ctx);
  return [...catalogView(ctx).byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Marks a catalog change inside the current transaction: bumps the shared schema version; the transaction's
 * next lookup reads the catalog again (its view: other requests go on reading what is committed), and once it
 * commits, so does everyone's.
 */
export async function touchCatalog(ctx: AppContext): Promise<void> {
  await ctx.db.run("INSERT INTO _meta (key, value) VALUES ('schema_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(_meta.value AS INTEGER) + 1 AS TEXT)");
  noteCatalogChange(ctx);
  ctx.db.afterCommit(() => {
    ctx.catalog.stale = true;
  });
}

/**
 * Marks the current write transaction's view of the catalog stale (making it one of its own): call it before
 * a write to the catalog's tables that a lookup could read before touchCatalog runs (`_relations`). A view
 * that is still the shared one's (its map) has changed nothing, so what it reads may be shared.
 */
export function noteCatalogChange(ctx: AppContext): void {
  const run = ctx.db.transactionRun();
  if (!run) {
    ctx.catalog.stale = true;
    return;
  }
  const view = ctx.catalog.txViews.get(run);
  if (view) view.stale = true;
  else ctx.catalog.txViews.set(run, { byName: ctx.catalog.byName, schemaVersion: -1, stale: true });
}

/**
 * What saveCollectionRow writes of an existing row's `fields`. `keep` (the default): none; the stored list
 * stays. `add`: the copy's fields that are not stored yet join the stored ones (schema growth). `replace`: the
 * copy's list (a field's rename, retype or drop, which read the row in the same transaction).
 */
export type FieldsWrite = "keep" | "add" | "replace";

/**
 * Writes a collection's stored row (insert or replace) and invalidates the cache. Call it inside a
 * write transaction. A caller may hold a copy read before another process changed the fields: one from
 * before fields were added keeps them (the columns exist; dropping them from the row would make the next
 * value for one fail as a duplicate column); one from before a field was renamed, retyped or dropped is
 * refused with 409 (its indexes, full-text fields and field rules may name what is no longer there).
 */
export async function saveCollectionRow(ctx: AppContext, c: Omit<Collection, "fieldMap">, opts: { fields?: FieldsWrite } = {}): Promise<void> {
  const stored = await ctx.db.get<{ fields: string }>("SELECT fields FROM _collections WHERE name = ?", [c.name]);
  if (stored && opts.fields !== "replace") c = { ...c, fields: mergeFields(c.name, c.fields, JSON.parse(stored.fields) as FieldDef[], opts.fields === "add") };
  await ctx.db.run(`INSERT INTO _collections (name, rules, field_rules, fields, indexes, fts, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET rules = excluded.rules, field_rules = excluded.field_rules,
         fields = excluded.fields, indexes = excluded.indexes, fts = excluded.fts, updated_at = excluded.updated_at`, [c.name, JSON.stringify(c.rules), JSON.stringify(c.fieldRules), JSON.stringify(c.fields), JSON.stringify(c.indexes), JSON.stringify(c.fts), c.createdAt, c.updatedAt]);
  await touchCatalog(ctx);
}

/**
 * The fields to store given a caller's copy and the stored list: the stored list, and with `add` the copy's
 * fields not stored yet after it. Every field of the copy that is stored must be there under the same name
 * and type; one that is not (but with `add`) was renamed or dropped since the copy was read: 409.
 */
function mergeFields(collection: string, copy: FieldDef[], known: FieldDef[], add: boolean): FieldDef[] {
  const byName = new Map(known.map((f) => [f.name.toLowerCase(), f]));
  const fresh: FieldDef[] = [];
  for (const f of copy) {
    const k = byName.get(f.name.toLowerCase());
    if (k && k.name === f.name && k.type === f.type) continue;
    if (!k && add) fresh.push(f);
    else throw new AppError(409, "conflict", `the fields of collection "${collection}" changed while this request ran; try again`);
  }
  return fresh.length ? [...known, ...fresh] : known;
}

/** The public JSON shape of a collection (CONTRACT §2). */
export function collectionToJson(c: Collection) {
  return {
    name: c.name,
    rules: c.rules,
    field_rules: c.fieldRules,
    fields: c.fields.map(fieldToJson),
    indexes: c.indexes,
    fts: { enabled: c.fts.enabled, fields: c.fts.fields },
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}
