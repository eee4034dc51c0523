import type { Database } from "bun:sqlite";
import type { AppContext } from "../context.ts";
import { notFound } from "../errors.ts";
import type { Collection, FieldDef, FieldRule, FtsState, IndexDef, Rules } from "./types.ts";

/**
 * In-memory cache of the `_collections` table. Another process (the CLI) may change the
 * table at any time; `PRAGMA data_version` tells us when anyone else committed, and
 * `_meta.schema_version` whether it was a catalog change. The question is asked at most once
 * per event-loop turn (see refreshCatalog), not once per request.
 */
export interface Catalog {
  byName: Map<string, Collection>;
  schemaVersion: number;
  dataVersion: number;
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
 * Notes a write transaction `ctx` committed (called by inTransaction), so every other context of this
 * process re-checks at its next read. Its own commit does not change what `ctx` has to learn.
 */
export function noteCommit(ctx: AppContext): void {
  const upToDate = ctx.catalog.checkedCommits === commitsInProcess;
  commitsInProcess++;
  if (upToDate) ctx.catalog.checkedCommits = commitsInProcess;
}

function readSchemaVersion(sqlite: Database): number {
  const row = sqlite.query<{ value: string }, []>("SELECT value FROM _meta WHERE key = 'schema_version'").get();
  return row ? Number(row.value) : 0;
}

function readDataVersion(sqlite: Database): number {
  return sqlite.query<{ data_version: number }, []>("PRAGMA data_version").get()!.data_version;
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

/** Reloads the whole catalog from the database. */
export function reloadCatalog(ctx: AppContext): void {
  const cat = ctx.catalog;
  const rows = ctx.sqlite.query<Row, []>("SELECT * FROM _collections ORDER BY name").all();
  cat.byName = new Map(rows.map((r) => [r.name.toLowerCase(), collectionFromRow(r)]));
  cat.schemaVersion = readSchemaVersion(ctx.sqlite);
  cat.dataVersion = readDataVersion(ctx.sqlite);
  cat.stale = false;
}

/**
 * Makes sure the cache reflects the database, reloading when this or another process changed it.
 * The database is asked at most once per event-loop turn (and once at the start of each write
 * transaction, which holds the write lock), so a CLI change is seen by the next request after it
 * commits without a statement on every request.
 */
export function refreshCatalog(ctx: AppContext): void {
  const cat = ctx.catalog;
  if (cat.stale) return reloadCatalog(ctx);
  // Inside our write transaction no other connection can commit, so one check per transaction
  // is enough (bulk inserts would otherwise ask SQLite several times per record).
  if (cat.checkedInTx) return;
  if (cat.inWriteTx) cat.checkedInTx = true;
  else {
    const t = currentTurn();
    if (cat.checkedTurn === t && cat.checkedCommits === commitsInProcess) return;
    cat.checkedTurn = t;
    cat.checkedCommits = commitsInProcess;
  }
  const dv = readDataVersion(ctx.sqlite);
  if (dv === cat.dataVersion) return;
  cat.dataVersion = dv;
  if (readSchemaVersion(ctx.sqlite) !== cat.schemaVersion) reloadCatalog(ctx);
}

/** The collection of that name (case-insensitive), or undefined. */
export function findCollection(ctx: AppContext, name: string): Collection | undefined {
  refreshCatalog(ctx);
  return ctx.catalog.byName.get(String(name).toLowerCase());
}

/** The collection of that name, or 404. */
export function requireCollection(ctx: AppContext, name: string): Collection {
  const c = findCollection(ctx, name);
  if (!c) throw notFound(`collection "${name}" not found`);
  return c;
}

/** All collections, by name. */
export function listCollections(ctx: AppContext): Collection[] {
  refreshCatalog(ctx);
  return [...ctx.catalog.byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Marks a catalog change inside the current transaction: bumps the shared schema version, invalidates the cache. */
export function touchCatalog(ctx: AppContext): void {
  ctx.sqlite
    .query(
      "INSERT INTO _meta (key, value) VALUES ('schema_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
    )
    .run();
  ctx.catalog.stale = true;
}

/**
 * Writes a collection's stored row (insert or replace) and invalidates the cache. Call it inside a
 * write transaction. Fields only ever grow, so fields already stored but missing from `c` are kept:
 * a caller holding a snapshot from before another process added a field must not drop it (the
 * column would stay, and the next value for it would fail as a duplicate column).
 */
export function saveCollectionRow(ctx: AppContext, c: Omit<Collection, "fieldMap">): void {
  const stored = ctx.sqlite.query<{ fields: string }, [string]>("SELECT fields FROM _collections WHERE name = ?").get(c.name);
  if (stored) {
    const known = JSON.parse(stored.fields) as FieldDef[];
    const given = new Set(c.fields.map((f) => f.name.toLowerCase()));
    if (known.some((f) => !given.has(f.name.toLowerCase()))) {
      const knownNames = new Set(known.map((f) => f.name.toLowerCase()));
      c = { ...c, fields: [...known, ...c.fields.filter((f) => !knownNames.has(f.name.toLowerCase()))] };
    }
  }
  ctx.sqlite
    .query(
      `INSERT INTO _collections (name, rules, field_rules, fields, indexes, fts, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET rules = excluded.rules, field_rules = excluded.field_rules,
         fields = excluded.fields, indexes = excluded.indexes, fts = excluded.fts, updated_at = excluded.updated_at`,
    )
    .run(
      c.name,
      JSON.stringify(c.rules),
      JSON.stringify(c.fieldRules),
      JSON.stringify(c.fields),
      JSON.stringify(c.indexes),
      JSON.stringify(c.fts),
      c.createdAt,
      c.updatedAt,
    );
  touchCatalog(ctx);
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
