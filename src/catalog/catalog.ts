import type { Dialect } from "../db/dialect.ts";
import type { Engine } from "../db/engine.ts";
import { AppError } from "../errors.ts";
import type { HookSet } from "../hooks/types.ts";
import { fieldToJson } from "./field-types.ts";
import type { CollectionHandle } from "./handle.ts";
import { CatalogSnapshot } from "./snapshot.ts";
import type { Collection, FieldDef, FieldRule, FtsState, IndexDef, Relation, Rules } from "./types.ts";

/** The part of the app's context the catalog works with (AppContext has it). */
export interface CatalogContext {
  db: Engine;
  catalog: Catalog;
}

/**
 * The catalog as lookups see it. The shared view (the Catalog itself) holds only what is committed:
 * requests that are not inside a write transaction read it. A write transaction that changes the catalog
 * (a new field, a relation) gets a view of its own (see refreshTxView), with its uncommitted changes, which
 * no other request sees and which is dropped with the transaction.
 */
export interface CatalogView {
  snapshot: CatalogSnapshot;
  /** The catalog's version (`_meta.schema_version`) the snapshot is known to match; -1 when unknown. */
  schemaVersion: number;
  /** Set when the view may differ from the database: the next lookup reloads it. */
  stale: boolean;
  /** The check or reload of this view that is running: lookups wait for it. */
  checking?: Promise<void>;
}

/**
 * In-memory cache of the `_collections` and `_relations` tables. Another process (the CLI, another node) may
 * change them at any time; the engine's change marks (Engine.changeMarks) tell us when anyone else committed,
 * and `_meta.schema_version` whether it was a catalog change. The question is asked at most once per
 * event-loop turn (see pendingCheck), not once per request.
 */
export interface Catalog extends CatalogView {
  /** What snapshots make handles with. */
  readonly hooks: HookSet;
  readonly sql: Dialect;
  /** The engine's data version (ChangeMarks.dataVersion) as of the last check. Caches of data (counts) keep the value they were made under. */
  dataVersion: number;
  /** The event-loop turn and in-process commit count of the last check against the database. */
  checkedTurn: number;
  checkedCommits: number;
  /** The views of the write transactions running, by their run (Engine.transactionRun). */
  txViews: WeakMap<object, CatalogView>;
  /** The reload of the shared view running (see reloadCatalog): lookups wait for it. */
  reloading?: Promise<void>;
  /** Event-loop turns, see noteRequest. */
  turn: number;
  turnEndQueued: boolean;
  turnByRequest: boolean;
  readonly endTurn: () => void;
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

/** An empty catalog, marked stale: the first lookup loads it. Its handles carry `hooks` and the engine's dialect. */
export function createCatalog(db: Engine, hooks: HookSet): Catalog {
  const cat: Catalog = {
    hooks,
    sql: db.sql,
    snapshot: new CatalogSnapshot(new Map(), [], hooks.list, db.sql),
    schemaVersion: -1,
    dataVersion: -1,
    stale: true,
    checkedTurn: -1,
    checkedCommits: -1,
    txViews: new WeakMap(),
    turn: 0,
    turnEndQueued: false,
    turnByRequest: false,
    endTurn: () => {
      cat.turn++;
      cat.turnEndQueued = false;
      cat.turnByRequest = false;
    },
  };
  return cat;
}

// Event-loop turns. Requests are dispatched in the loop's I/O phase, one after the other: a turn begins at
// the first request of that phase (noteRequest), and ends when the immediate it queued runs, after the phase.
// A turn begun by a lookup outside a request's dispatch (in an immediate, a timer: the continuation of a
// batched read or a group commit) ends at the next request's dispatch, which may come in the next I/O
// phase, before that immediate: a request that arrives after another process committed never reuses a
// check made before it arrived.
function queueTurnEnd(cat: Catalog): void {
  if (cat.turnEndQueued) return;
  cat.turnEndQueued = true;
  setImmediate(cat.endTurn);
}

/** Called at the dispatch of every request (see fast-read.ts): its lookups share the check of its I/O phase's turn. */
export function noteRequest(cat: Catalog): void {
  if (cat.turnByRequest && cat.turnEndQueued) return;
  cat.turn++;
  cat.turnByRequest = true;
  queueTurnEnd(cat);
}

function currentTurn(cat: Catalog): number {
  queueTurnEnd(cat);
  return cat.turn;
}

// Write transactions committed by any connection of this process. Module state on purpose: it stands for
// the process, not for one context. Another context of the same process (a second app on the same database,
// as tests and the CLI's in-process tools open one) may commit between two awaits of one turn, and contexts
// do not know of each other: a commit counted here makes every catalog of the process ask the database again.
let commitsInProcess = 0;

/**
 * Notes a write transaction `ctx` committed (called by inTransaction), so every other context of this
 * process re-checks at its next read. Its own commit does not change what `ctx` has to learn.
 */
export function noteCommit(ctx: CatalogContext): void {
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

/** Reads the catalog tables (through the transaction of this async context, if any). */
async function readSnapshot(ctx: CatalogContext): Promise<CatalogSnapshot> {
  const rows = await ctx.db.all<Row>("SELECT * FROM _collections ORDER BY name");
  const relations = await ctx.db.all<Relation>(
    "SELECT id, from_col, from_field, to_col, to_field, type, on_delete, created_at FROM _relations ORDER BY created_at, id",
  );
  const byName = new Map(rows.map((r) => [r.name.toLowerCase(), collectionFromRow(r)]));
  return new CatalogSnapshot(byName, relations, ctx.catalog.hooks.list, ctx.catalog.sql);
}

/**
 * Reloads the shared view from what is committed. Call it outside a transaction. One reload runs at a time
 * (a later one could otherwise finish first, and the earlier one put back what it read); one asked for while
 * another runs waits for it, then runs again if the view was marked stale meanwhile (a commit it may predate).
 */
export function reloadCatalog(ctx: CatalogContext): Promise<void> {
  const cat = ctx.catalog;
  if (cat.reloading) return cat.reloading.then(() => (cat.stale ? reloadCatalog(ctx) : undefined));
  const reloading = loadShared(ctx).finally(() => {
    cat.reloading = undefined;
  });
  cat.reloading = reloading;
  return reloading;
}

async function loadShared(ctx: CatalogContext): Promise<void> {
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
    cat.snapshot = await readSnapshot(ctx);
    cat.schemaVersion = schemaVersion;
  } catch (err) {
    cat.stale = true;
    throw err;
  }
}

/** The view of the write transaction this async context runs, if it has one yet. */
function txViewOf(ctx: CatalogContext): CatalogView | undefined {
  const run = ctx.db.transactionRun();
  return run && ctx.catalog.txViews.get(run);
}

/** The view lookups of this async context read: its write transaction's, else the shared one. */
export function catalogView(ctx: CatalogContext): CatalogView {
  return txViewOf(ctx) ?? ctx.catalog;
}

/**
 * Brings the view of a write transaction (`run`) up to date. The first lookup of a transaction makes its
 * view, from the shared one, and asks the database once (inside the transaction, which on SQLite holds
 * the write lock: no other connection can commit until it ends; on PostgreSQL, what its snapshot shows)
 * whether the catalog changed since; the transaction's own changes (touchCatalog) and rolled-back
 * savepoints (markTxCatalogStale) make it read the catalog again, through the transaction.
 */
function refreshTxView(ctx: CatalogContext, run: object): Promise<void> | null {
  const cat = ctx.catalog;
  let view = cat.txViews.get(run);
  if (view) {
    if (view.checking || !view.stale) return view.checking ?? null;
  } else {
    view = { snapshot: cat.snapshot, schemaVersion: cat.stale ? -1 : cat.schemaVersion, stale: false };
    cat.txViews.set(run, view);
  }
  const v = view;
  const checking = (async () => {
    const stale = v.stale;
    v.stale = false;
    const schemaVersion = await ctx.db.schemaVersion();
    if (stale || schemaVersion !== v.schemaVersion) {
      v.snapshot = await readSnapshot(ctx);
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
 * The check this async context's view needs before a lookup may trust it, or null when it is current.
 * Outside a write transaction: the shared view is checked at most once per event-loop turn (see noteRequest),
 * so a CLI change is seen by the next request after it commits without a statement on every request. Inside
 * one: see refreshTxView.
 */
export function pendingCheck(ctx: CatalogContext): Promise<void> | null {
  const run = ctx.db.transactionRun();
  if (run) return refreshTxView(ctx, run);
  const cat = ctx.catalog;
  // A lookup during a reload waits for it: what the view holds meanwhile may predate a commit it must see.
  if (cat.reloading) return cat.reloading.then(() => pendingCheck(ctx) ?? undefined);
  if (cat.stale) return reloadCatalog(ctx);
  const t = currentTurn(cat);
  // Lookups of the turn whose check is still running wait for it: a request that arrived after another
  // process committed must not be answered from what was known before (a count, a collection).
  if (cat.checkedTurn === t && cat.checkedCommits === commitsInProcess) return cat.checking ?? null;
  cat.checkedTurn = t;
  cat.checkedCommits = commitsInProcess;
  // An engine that answers at once (SQLite) makes the usual case, nothing moved, need no wait at all.
  if (!cat.checking && ctx.db.changeMarksNow && unmoved(ctx)) return null;
  const checking = checkDataVersion(ctx).finally(() => {
    if (cat.checking === checking) cat.checking = undefined;
  });
  cat.checking = checking;
  return checking;
}

/** Whether the engine's marks, asked at once, say nothing moved since the catalog's check (an error: the asynchronous check tells). */
function unmoved(ctx: CatalogContext): boolean {
  try {
    return ctx.db.changeMarksNow!().dataVersion === ctx.catalog.dataVersion;
  } catch {
    return false;
  }
}

/** The hook files were loaded again: the next lookup reads the catalog again, so the handles it makes carry the new hooks. */
export function noteHooksChanged(ctx: CatalogContext): void {
  ctx.catalog.stale = true;
}

/**
 * Makes the next lookup ask the database whether the catalog changed, even within this event-loop
 * turn: for work triggered by another node's notice, which may name what that node just created.
 */
export function recheckCatalog(ctx: CatalogContext): void {
  ctx.catalog.checkedTurn = -1;
}

/**
 * Makes the running write transaction read the catalog again at its next lookup: a savepoint of it rolled
 * back, maybe with catalog changes. Outside a transaction it does nothing (the shared view holds only
 * what is committed).
 */
export function markTxCatalogStale(ctx: CatalogContext): void {
  const view = txViewOf(ctx);
  if (view) view.stale = true;
}

async function checkDataVersion(ctx: CatalogContext): Promise<void> {
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

// The lookups: the catalog as this async context may trust it (fresh as of this event-loop turn, or its write
// transaction's own), checked first when needed. Each answers through a promise; one that needs no statement
// (the common case within a request) answers with a settled one.

/** The catalog as this async context sees it now. */
export function currentCatalog(ctx: CatalogContext): Promise<CatalogSnapshot> {
  const pending = pendingCheck(ctx);
  return pending ? pending.then(() => catalogView(ctx).snapshot) : Promise.resolve(catalogView(ctx).snapshot);
}

/**
 * The handle of the collection of that name (case-insensitive), or 404: what a request resolves once, at
 * dispatch or at the start of its write transaction, and hands to everything below.
 */
export function openCollection(ctx: CatalogContext, name: string): Promise<CollectionHandle> {
  const pending = pendingCheck(ctx);
  return pending ? pending.then(() => catalogView(ctx).snapshot.require(name)) : catalogView(ctx).snapshot.resolved(name);
}

/** The handle of the collection of that name, or undefined. */
export async function findHandle(ctx: CatalogContext, name: string): Promise<CollectionHandle | undefined> {
  return (await currentCatalog(ctx)).handle(name);
}

/** The collection of that name (case-insensitive), or undefined. */
export async function findCollection(ctx: CatalogContext, name: string): Promise<Collection | undefined> {
  return (await currentCatalog(ctx)).get(name);
}

/** The collection of that name, or 404. */
export async function requireCollection(ctx: CatalogContext, name: string): Promise<Collection> {
  return (await openCollection(ctx, name)).col;
}

/**
 * The handle as this process last knew it, without asking the database (undefined when unknown or the cache is
 * stale): for a decision made before the work looks the collection up again itself (how a create may be grouped).
 */
export function lastKnownHandle(ctx: CatalogContext, name: string): CollectionHandle | undefined {
  const view = catalogView(ctx);
  // A catalog marked stale (a commit of this process, reloaded hook files), or being read again, holds handles
  // of the old reading.
  return view.stale || ctx.catalog.stale || ctx.catalog.reloading ? undefined : view.snapshot.handle(name);
}

/** All collections, by name. */
export async function listCollections(ctx: CatalogContext): Promise<readonly Collection[]> {
  return (await currentCatalog(ctx)).list();
}

/**
 * Marks a catalog change inside the current transaction: bumps the shared schema version; the transaction's
 * next lookup reads the catalog again (its view: other requests go on reading what is committed), and once it
 * commits, so does everyone's.
 */
export async function touchCatalog(ctx: CatalogContext): Promise<void> {
  await ctx.db.run("INSERT INTO _meta (key, value) VALUES ('schema_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(_meta.value AS INTEGER) + 1 AS TEXT)");
  noteCatalogChange(ctx);
  ctx.db.afterCommit(() => {
    ctx.catalog.stale = true;
  });
}

/**
 * Marks the current write transaction's view of the catalog stale (making it one of its own): call it before
 * a write to the catalog's tables that a lookup could read before touchCatalog runs (`_relations`). A view
 * that is still the shared one's (its snapshot) has changed nothing, so what it reads may be shared.
 */
export function noteCatalogChange(ctx: CatalogContext): void {
  const run = ctx.db.transactionRun();
  if (!run) {
    ctx.catalog.stale = true;
    return;
  }
  const view = ctx.catalog.txViews.get(run);
  if (view) view.stale = true;
  else ctx.catalog.txViews.set(run, { snapshot: ctx.catalog.snapshot, schemaVersion: -1, stale: true });
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
export async function saveCollectionRow(ctx: CatalogContext, c: Omit<Collection, "fieldMap">, opts: { fields?: FieldsWrite } = {}): Promise<void> {
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

/** Removes a collection's stored row; call touchCatalog after (inside the same transaction). */
export async function deleteCollectionRow(ctx: CatalogContext, name: string): Promise<void> {
  await ctx.db.run("DELETE FROM _collections WHERE name = ?", [name]);
}

/** Stores a new relation: the catalog view of the transaction is read again at its next lookup. */
export async function insertRelationRow(ctx: CatalogContext, rel: Relation): Promise<void> {
  noteCatalogChange(ctx);
  await ctx.db.run(
    "INSERT INTO _relations (id, from_col, from_field, to_col, to_field, type, on_delete, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [rel.id, rel.from_col, rel.from_field, rel.to_col, rel.to_field, rel.type, rel.on_delete, rel.created_at],
  );
}

/** Removes a relation's stored row, as insertRelationRow stores one. */
export async function deleteRelationRow(ctx: CatalogContext, id: string): Promise<void> {
  noteCatalogChange(ctx);
  await ctx.db.run("DELETE FROM _relations WHERE id = ?", [id]);
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
