import type { Engine } from "../db/engine.ts";
import type { AppContext } from "../context.ts";
import { findCollection, listCollections, requireCollection, saveCollectionRow } from "../collections/catalog.ts";
import { q, schemaIdent } from "../collections/ddl.ts";
import type { Collection, FieldDef, FtsState } from "../collections/types.ts";
import { toTsQuery, tsvectorExpr } from "../db/pg-fts.ts";
import type { Where } from "../query/sql.ts";
import { inTransaction } from "../db/tx.ts";
import { badRequest } from "../errors.ts";

// Full-text search over a collection: one FTS5 table `_fts_<name>` whose rowid is the record
// row's rowid (always named `_rowid_`, which no user field can shadow) and whose one column
// holds every text field joined by spaces. Triggers on the collection table keep it current
// for every write path (single, bulk, batch, cascades, the CLI): insert adds, update re-indexes,
// hard delete removes. Enabling creates the empty index and its triggers at once, then adds the
// rows that already existed in small steps (see buildIndex), so a large collection never stops
// the server. Soft-deleted rows stay indexed, so `search` with `include_deleted=true`
// finds them too; without it every read already hides them.
// A new text field only needs the triggers rebuilt, since old rows hold null there.
//
// On PostgreSQL the index is a generated column `_fts` of the collection table (a `tsvector` of the
// same text, `english` configuration) with a GIN index: PostgreSQL fills it for every row when the
// column is added and keeps it current on every write, so the index is ready at once and there is
// no build in steps. A new text field rebuilds the column (its expression names the fields).

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

/** The FTS5 table of a collection. Collection names start with a letter, so no user table can clash. */
export function ftsTable(name: string): string {
  return `_fts_${name}`;
}

/**
 * The generated `tsvector` column of a collection on PostgreSQL. It starts with `_`, which no user field
 * can, and no read names it: records, field lists, sorts and filters never see it.
 */
export const FTS_COLUMN = "_fts";

const TRIGGERS = ["ai", "au", "ad"] as const;

function textFields(fields: FieldDef[]): string[] {
  return fields.filter((f) => f.type === "text").map((f) => f.name);
}

/** The indexed text of a row: its text fields joined by spaces; `prefix` is "new." in triggers. */
function bodyExpr(prefix: "new." | "", fields: string[]): string {
  if (!fields.length) return "''";
  return fields.map((f) => `coalesce(${prefix}${q(f)}, '')`).join(" || ' ' || ");
}

async function dropTriggers(db: Engine, name: string): Promise<void> {
  for (const t of TRIGGERS) await db.exec(`DROP TRIGGER IF EXISTS ${q(`${ftsTable(name)}_${t}`)}`);
}

/** (Re)creates the triggers that keep the index of `name` current for these text fields. */
async function createTriggers(db: Engine, name: string, fields: string[]): Promise<void> {
  await dropTriggers(db, name);
  const t = q(name);
  const f = q(ftsTable(name));
  const body = bodyExpr("new.", fields);
  const watched = fields.length ? fields.map(q).join(", ") : q("_id");
  await db.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_ai`)} AFTER INSERT ON ${t} BEGIN
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`);
  await db.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_au`)} AFTER UPDATE OF ${watched} ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`);
  await db.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_ad`)} AFTER DELETE ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
  END`);
}

/**
 * PostgreSQL: (re)creates the generated column over these text fields and its GIN index, which
 * PostgreSQL fills from every row before the statement ends. The index goes with the column.
 */
async function createPgColumn(db: Engine, name: string, fields: string[]): Promise<void> {
  await dropPgColumn(db, name);
  await db.exec(`ALTER TABLE ${q(name)} ADD COLUMN ${q(FTS_COLUMN)} tsvector GENERATED ALWAYS AS (${tsvectorExpr(fields)}) STORED`);
  // `_fts_<name>`: no collection or user index can be called so (their names start with a letter).
  await db.exec(`CREATE INDEX ${q(schemaIdent(db, ftsTable(name)))} ON ${q(name)} USING gin (${q(FTS_COLUMN)})`);
}

/** PostgreSQL: drops the generated column, and its index with it. */
async function dropPgColumn(db: Engine, name: string): Promise<void> {
  await db.exec(`ALTER TABLE IF EXISTS ${q(name)} DROP COLUMN IF EXISTS ${q(FTS_COLUMN)}`);
}

/** Drops the index and its triggers of a collection (no-op when there is none). */
export async function dropFtsObjects(db: Engine, name: string): Promise<void> {
  if (db.dialect === "postgres") return await dropPgColumn(db, name);
  await dropTriggers(db, name);
  await db.exec(`DROP TABLE IF EXISTS ${q(ftsTable(name))}`);
}

/**
 * Creates the index and what keeps it current on every write. On SQLite it starts empty (see
 * buildIndex); on PostgreSQL it is complete when this returns.
 */
async function createIndexObjects(db: Engine, col: Collection): Promise<string[]> {
  const fields = textFields(col.fields);
  if (db.dialect === "postgres") {
    await createPgColumn(db, col.name, fields);
    return fields;
  }
  await dropFtsObjects(db, col.name);
  await db.exec(`CREATE VIRTUAL TABLE ${q(ftsTable(col.name))} USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')`);
  await createTriggers(db, col.name, fields);
  return fields;
}

/** Active (not soft-deleted) records in the index. */
async function indexedCount(db: Engine, name: string): Promise<number> {
  const t = q(name);
  // Every row has its generated vector: the index holds every record.
  if (db.dialect === "postgres") return (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t} WHERE "_deleted_at" IS NULL`))!.n;
  const f = q(ftsTable(name));
  return (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${f} JOIN ${t} ON ${t}._rowid_ = ${f}.rowid WHERE ${t}."_deleted_at" IS NULL`))!.n;
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
 * while a large collection is indexed. Rows written meanwhile are indexed by the triggers; a step
 * re-reads each row, and `INSERT OR REPLACE` makes a row the triggers already indexed harmless.
 * Stops quietly when the index is disabled or the collection dropped meanwhile.
 */
async function buildIndex(ctx: AppContext, name: string, onProgress?: (p: FtsProgress) => void): Promise<void> {
  const table = q(name);
  const { last, total } = (await ctx.db.get<{ last: number | null; total: number }>(`SELECT max(_rowid_) AS last, count(*) AS total FROM ${table}`))!;
  let after = 0;
  let done = 0;
  onProgress?.({ done, total });
  for (;;) {
    const step = await inTransaction(ctx, async () => {
      const col = await findCollection(ctx, name);
      if (!col?.fts.enabled || !col.fts.building) return "stopped";
      const bound = (await ctx.db.get<{ upto: number | null; n: number }>(`SELECT max(r) AS upto, count(*) AS n FROM (SELECT _rowid_ AS r FROM ${table} WHERE _rowid_ > ? AND _rowid_ <= ? ORDER BY _rowid_ LIMIT ?)`, [after, last ?? 0, FTS_BUILD_CHUNK]))!;
      if (bound.upto === null) {
        await saveCollectionRow(ctx, { ...col, fts: { enabled: true, fields: col.fts.fields }, updatedAt: ctx.clock.now() });
        return "finished";
      }
      await ctx.db.run(`INSERT OR REPLACE INTO ${q(ftsTable(name))} (rowid, body) SELECT _rowid_, ${bodyExpr("", col.fts.fields)} FROM ${table} WHERE _rowid_ > ? AND _rowid_ <= ?`, [after, bound.upto]);
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
 * responsive (on PostgreSQL: in the statement that creates it); resolves when the index is ready.
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
  // Only SQLite's index is filled in steps after it is created.
  const inSteps = ctx.db.dialect === "sqlite";
  if (!col.fts.enabled) {
    created = await inTransaction(ctx, async () => {
      const now = await requireCollection(ctx, name);
      if (now.fts.enabled) return false;
      const fields = await createIndexObjects(ctx.db, now);
      await saveCollectionRow(ctx, { ...now, fts: inSteps ? { enabled: true, fields, building: true } : { enabled: true, fields }, updatedAt: ctx.clock.now() });
      return true;
    });
  }
  if ((created && inSteps) || (await requireCollection(ctx, name)).fts.building) await runBuild(ctx, col.name, opts.onProgress);
  return { status: await ftsStatus(ctx, name), created };
}

/** Resumes, in the background, the builds a stopped process left unfinished (called when a server starts). */
export async function resumeFtsBuilds(ctx: AppContext): Promise<void> {
  // PostgreSQL's index is complete when it is created: nothing is ever left to build.
  if (ctx.db.dialect !== "sqlite") return;
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
  const text = textFields(fields);
  if (text.length === col.fts.fields.length) return col.fts;
  // PostgreSQL computes the new column for every row: old rows hold null in the new fields.
  if (ctx.db.dialect === "postgres") await createPgColumn(ctx.db, col.name, text);
  else await createTriggers(ctx.db, col.name, text);
  return { ...col.fts, fields: text };
}

/** How a read searches the index of a collection: see ftsQuery. */
export interface FtsQuery {
  /** The collection table joined with what the search needs (the FROM clause). */
  from: Where;
  /** The condition "the row matches". */
  match: Where;
  /** The relevance of a matching row, an expression without values; best first in `rankDesc` order. */
  rank: string;
  rankDesc: boolean;
}

/**
 * The SQL of a search for `text` (400 when it is malformed) in the index of collection `name`.
 * SQLite: the FTS5 table joined on the row id, `MATCH`, and FTS5's `rank` (BM25, lower is better).
 * PostgreSQL: the query computed once in a one-row subquery that the planner folds into the
 * condition on the GIN-indexed column, and `ts_rank` (higher is better).
 */
export function ftsQuery(db: Engine, name: string, text: string): FtsQuery {
  const table = q(name);
  if (db.dialect === "postgres") {
    const vector = `${table}.${q(FTS_COLUMN)}`;
    return {
      from: { sql: `${table} CROSS JOIN (SELECT to_tsquery('english', ?) AS "q") AS "_search"`, params: [toTsQuery(text)] },
      match: { sql: `${vector} @@ "_search"."q"`, params: [] },
      rank: `ts_rank(${vector}, "_search"."q")`,
      rankDesc: true,
    };
  }
  const fts = q(ftsTable(name));
  return {
    from: { sql: `${table} JOIN ${fts} ON ${fts}.rowid = ${table}._rowid_`, params: [] },
    match: { sql: `${fts} MATCH ?`, params: [toMatchQuery(text)] },
    rank: `${fts}.rank`,
    rankDesc: false,
  };
}

const BAREWORD_RE = /^[\p{L}\p{N}_]+$/u;

/**
 * Turns a user's search text into an FTS5 query. Words, `prefix*`, "quoted phrases", AND, OR,
 * NOT and parentheses keep their meaning; any other punctuation is quoted, so a word like
 * `e-mail` or `title:x` is searched as text instead of read as FTS5 syntax. Structural mistakes
 * (unterminated quote, dangling operator) end as 400.
 */
export function toMatchQuery(raw: string): string {
  const out: string[] = [];
  let i = 0;
  while (i < raw.length) {
    const c = raw[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "(" || c === ")") {
      out.push(c);
      i++;
    } else if (c === '"') {
      const end = raw.indexOf('"', i + 1);
      if (end < 0) throw badRequest("invalid search query: a quote is not closed");
      const phrase = raw.slice(i + 1, end);
      i = end + 1;
      const star = raw[i] === "*";
      if (star) i++;
      out.push(`"${phrase}"${star ? "*" : ""}`);
    } else {
      let j = i;
      while (j < raw.length && !/[\s"()]/.test(raw[j])) j++;
      let word = raw.slice(i, j);
      i = j;
      if (word === "AND" || word === "OR" || word === "NOT") {
        out.push(word);
        continue;
      }
      const star = word.endsWith("*");
      word = word.replace(/\*+$/, "");
      if (!word) throw badRequest("invalid search query: * must follow a word");
      out.push((BAREWORD_RE.test(word) ? word : `"${word}"`) + (star ? "*" : ""));
    }
  }
  if (!out.length) throw badRequest("invalid search query: it is empty");
  return out.join(" ");
}

/**
 * True for the error SQLite raises for a MATCH expression it cannot parse, or PostgreSQL for a
 * tsquery (toTsQuery writes only valid ones: this is a safety net).
 */
export function isFtsQueryError(err: unknown): boolean {
  return err instanceof Error && /fts5|unknown special query|no such column|syntax error in tsquery/i.test(err.message);
}
