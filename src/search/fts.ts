import { execAll, type Engine } from "../db/engine.ts";
import type { AppContext } from "../context.ts";
import { findCollection, findHandle, listCollections, requireCollection, saveCollectionRow } from "../catalog/catalog.ts";
import type { Collection, FieldDef, FtsState, Relation } from "../catalog/types.ts";
import type { FtsSearch } from "../db/dialect.ts";
import { inTransaction } from "../transaction.ts";
import { tokenize } from "./syntax.ts";

// Full-text search over a collection: an index over every text field joined by spaces, kept current for every
// write path (single, bulk, batch, cascades, the CLI) by the engine (FtsDialect: SQLite's FTS5 table and its
// triggers, PostgreSQL's generated `tsvector` column). Soft-deleted rows stay indexed, so `search` with
// `include_deleted=true` finds them too; without it every read already hides them. Where the index starts
// empty (SQLite), enabling creates it and what keeps it current at once, then adds the rows that already
// existed in small steps (see buildIndex), so a large collection never stops the server; elsewhere it is
// complete once created.

export interface FtsStatus {
  enabled: boolean;
  fields: string[];
  indexed_records: number;
  /** `disabled`, `building` (records written before enabling are still being added) or `ready`. */
  state: "disabled" | "building" | "ready";
}

/** Progress of a build: rows of the collection table visited so far, of `total` when it started. */
export interface FtsProgress {
  done: number;
  total: number;
}

/** Rows indexed per step of a build; between steps the event loop serves requests. */
export const FTS_BUILD_CHUNK = 1000;

/** The fields the index takes: text fields, but not those holding record ids (relation fields). */
function textFields(fields: FieldDef[], ids: ReadonlySet<string>): string[] {
  return fields.filter((f) => f.type === "text" && !ids.has(f.name.toLowerCase())).map((f) => f.name);
}

/**
 * The fields of collection `name` that hold ids of records among `relations` (a `one` relation's field, the field
 * of a `many` relation's target naming its parent), lower-cased: words of an id find nothing a person searches for.
 */
function idFieldsAmong(name: string, relations: Iterable<Pick<Relation, "type" | "from_col" | "from_field" | "to_col" | "to_field">>): Set<string> {
  const ids = new Set<string>();
  const n = name.toLowerCase();
  for (const r of relations) {
    if (r.type === "one" && r.from_col.toLowerCase() === n) ids.add(r.from_field.toLowerCase());
    if (r.type === "many" && r.to_field && r.to_col.toLowerCase() === n) ids.add(r.to_field.toLowerCase());
  }
  return ids;
}

async function idFields(ctx: AppContext, name: string): Promise<Set<string>> {
  const h = await findHandle(ctx, name);
  return idFieldsAmong(name, h ? [...h.from, ...h.to] : []);
}

/** The fields of collection `name` an index over `fields` takes: the text fields that do not hold record ids. */
export async function indexedFields(ctx: AppContext, name: string, fields: FieldDef[]): Promise<string[]> {
  return textFields(fields, await idFields(ctx, name));
}

/** indexedFields where the relations are given (those a schema document will leave, for its plan's text). */
export function indexedFieldsAmong(name: string, fields: FieldDef[], relations: Parameters<typeof idFieldsAmong>[1]): string[] {
  return textFields(fields, idFieldsAmong(name, relations));
}

/** Drops the index of a collection and what keeps it current (no-op when there is none). */
export async function dropFtsObjects(db: Engine, name: string): Promise<void> {
  await execAll(db, db.sql.fts.drop(name));
}

/** Drops what of the index of a collection its table, dropped next, does not take with it. */
export async function dropFtsBesideTable(db: Engine, name: string): Promise<void> {
  await execAll(db, db.sql.fts.dropBesideTable(name));
}

/** Creates the index and what keeps it current on every write (see FtsDialect.steps for whether it starts empty). */
async function createIndexObjects(ctx: AppContext, col: Collection): Promise<string[]> {
  const fields = textFields(col.fields, await idFields(ctx, col.name));
  await execAll(ctx.db, ctx.db.sql.fts.create(col.name, fields));
  return fields;
}

/** Active (not soft-deleted) records in the index. */
async function indexedCount(db: Engine, name: string): Promise<number> {
  return (await db.get<{ n: number }>(db.sql.fts.indexedCount(name)))!.n;
}

/** `GET /admin/collections/:name/fts`. */
export async function ftsStatus(ctx: AppContext, name: string): Promise<FtsStatus> {
  const col = await requireCollection(ctx, name);
  if (!col.fts.enabled) return { enabled: false, fields: [], indexed_records: 0, state: "disabled" };
  return {
    enabled: true,
    fields: col.fts.fields,
    indexed_records: await indexedCount(ctx.db, col.name),
    state: col.fts.building ? "building" : "ready",
  };
}

/** Builds under way in this process, per context and collection, so a second enable waits for the first. */
const builds = new WeakMap<AppContext, Map<string, Promise<void>>>();

const nextTick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Adds the rows that existed when the index was created, FTS_BUILD_CHUNK at a time, each step its own
 * short transaction with a turn of the event loop in between, so requests (and other writers) go on
 * while a large collection is indexed. Rows written meanwhile are indexed by what keeps the index current;
 * a step re-reads each row, and indexing a row again is harmless.
 * Stops quietly when the index is disabled or the collection dropped meanwhile (or it never starts empty).
 */
async function buildIndex(ctx: AppContext, name: string, onProgress?: (p: FtsProgress) => void): Promise<void> {
  const steps = ctx.db.sql.fts.steps;
  if (!steps) return;
  const { last, total } = (await ctx.db.get<{ last: number | null; total: number }>(steps.extent(name)))!;
  let after = 0;
  let done = 0;
  onProgress?.({ done, total });
  for (;;) {
    const step = await inTransaction(ctx, async () => {
      const col = await findCollection(ctx, name);
      if (!col?.fts.enabled || !col.fts.building) return "stopped";
      const bound = (await ctx.db.get<{ upto: number | null; n: number }>(steps.next(name), [after, last ?? 0, FTS_BUILD_CHUNK]))!;
      if (bound.upto === null) {
        await saveCollectionRow(ctx, { ...col, fts: { enabled: true, fields: col.fts.fields }, updatedAt: ctx.clock.now() });
        return "finished";
      }
      await ctx.db.run(steps.fill(name, col.fts.fields), [after, bound.upto]);
      after = bound.upto;
      done += bound.n;
      return "more";
    });
    if (step !== "more") {
      if (step === "finished") onProgress?.({ done: total, total });
      return;
    }
    onProgress?.({ done: Math.min(done, total), total });
    await nextTick();
  }
}

/** Runs (or joins) the build of `name` in this process. */
function runBuild(ctx: AppContext, name: string, onProgress?: (p: FtsProgress) => void): Promise<void> {
  let mine = builds.get(ctx);
  if (!mine) builds.set(ctx, (mine = new Map()));
  const key = name.toLowerCase();
  const running = mine.get(key);
  if (running) return running;
  const build = buildIndex(ctx, name, onProgress).finally(() => mine.delete(key));
  mine.set(key, build);
  return build;
}

/**
 * `POST …/fts`: creates the index and fills it from every record, in steps that leave the server
 * responsive (or in the statement that creates it, see FtsDialect.steps); resolves when the index is ready.
 * `created` is false when it already existed (a build still under way, here or left by a stopped
 * process, is joined or resumed).
 */
export async function enableFts(
  ctx: AppContext,
  name: string,
  opts: { onProgress?: (p: FtsProgress) => void } = {},
): Promise<{ status: FtsStatus; created: boolean }> {
  const col = await requireCollection(ctx, name);
  let created = false;
  // An index that starts empty is filled in steps after it is created.
  const inSteps = ctx.db.sql.fts.steps !== undefined;
  if (!col.fts.enabled) {
    created = await inTransaction(ctx, async () => {
      const now = await requireCollection(ctx, name);
      if (now.fts.enabled) return false;
      const fields = await createIndexObjects(ctx, now);
      await saveCollectionRow(ctx, { ...now, fts: inSteps ? { enabled: true, fields, building: true } : { enabled: true, fields }, updatedAt: ctx.clock.now() });
      return true;
    });
  }
  if ((created && inSteps) || (await requireCollection(ctx, name)).fts.building) await runBuild(ctx, col.name, opts.onProgress);
  return { status: await ftsStatus(ctx, name), created };
}

/** Resumes, in the background, the builds a stopped process left unfinished (called when a server starts). */
export async function resumeFtsBuilds(ctx: AppContext): Promise<void> {
  // An index complete when it is created never leaves anything to build.
  if (!ctx.db.sql.fts.steps) return;
  for (const col of await listCollections(ctx)) {
    if (!col.fts.enabled || !col.fts.building) continue;
    runBuild(ctx, col.name).catch((err) => ctx.log.error(`full-text index of "${col.name}": build stopped`, { err }));
  }
}

/** `DELETE …/fts`: drops the index and its triggers (a build under way stops at its next step). */
export async function disableFts(ctx: AppContext, name: string): Promise<{ enabled: false }> {
  const col = await requireCollection(ctx, name);
  await inTransaction(ctx, async () => {
    await dropFtsObjects(ctx.db, col.name);
    if (col.fts.enabled) await saveCollectionRow(ctx, { ...col, fts: { enabled: false, fields: [] }, updatedAt: ctx.clock.now() });
  });
  return { enabled: false };
}

/**
 * Called (inside the writer's transaction) after new fields were added: when the collection
 * has an index, new text fields join it. Returns the `fts` member to store.
 */
export async function ftsAfterNewFields(ctx: AppContext, col: Collection, fields: FieldDef[]): Promise<FtsState> {
  if (!col.fts.enabled) return col.fts;
  const text = textFields(fields, await idFields(ctx, col.name));
  if (text.length === col.fts.fields.length) return col.fts;
  await execAll(ctx.db, ctx.db.sql.fts.refields(col.name, text));
  return { ...col.fts, fields: text };
}

/**
 * How a read searches the index of collection `name` for `text` (400 when it is malformed): the FROM clause,
 * the match condition and the relevance, as the engine writes them (FtsDialect.search).
 */
export function ftsQuery(db: Engine, name: string, text: string): FtsSearch {
  return db.sql.fts.search(name, tokenize(text));
}

/** The message of the error an engine raised for a search's query text it could not parse, else null. */
export function ftsQueryError(db: Engine, err: unknown): string | null {
  return db.sql.fts.queryError(err);
}
