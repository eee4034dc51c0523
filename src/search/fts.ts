import type { Database } from "bun:sqlite";
import type { AppContext } from "../context.ts";
import { requireCollection, saveCollectionRow } from "../collections/catalog.ts";
import { q } from "../collections/ddl.ts";
import type { Collection, FieldDef, FtsState } from "../collections/types.ts";
import { inTransaction } from "../db/tx.ts";
import { badRequest } from "../errors.ts";

// Full-text search over a collection: one FTS5 table `_fts_<name>` whose rowid is the record
// row's rowid (always named `_rowid_`, which no user field can shadow) and whose one column
// holds every text field joined by spaces. Triggers on the collection table keep it current
// for every write path (single, bulk, batch, cascades, the CLI): insert adds, update re-indexes,
// hard delete removes. Soft-deleted rows stay indexed, so `search` with `include_deleted=true`
// finds them too; without it every read already hides them.
// A new text field only needs the triggers rebuilt, since old rows hold null there.

export interface FtsStatus {
  enabled: boolean;
  fields: string[];
  indexed_records: number;
}

/** The FTS5 table of a collection. Collection names start with a letter, so no user table can clash. */
export function ftsTable(name: string): string {
  return `_fts_${name}`;
}

const TRIGGERS = ["ai", "au", "ad"] as const;

function textFields(fields: FieldDef[]): string[] {
  return fields.filter((f) => f.type === "text").map((f) => f.name);
}

/** The indexed text of a row: its text fields joined by spaces; `prefix` is "new." in triggers. */
function bodyExpr(prefix: "new." | "", fields: string[]): string {
  if (!fields.length) return "''";
  return fields.map((f) => `coalesce(${prefix}${q(f)}, '')`).join(" || ' ' || ");
}

function dropTriggers(sqlite: Database, name: string): void {
  for (const t of TRIGGERS) sqlite.exec(`DROP TRIGGER IF EXISTS ${q(`${ftsTable(name)}_${t}`)}`);
}

/** (Re)creates the triggers that keep the index of `name` current for these text fields. */
function createTriggers(sqlite: Database, name: string, fields: string[]): void {
  dropTriggers(sqlite, name);
  const t = q(name);
  const f = q(ftsTable(name));
  const body = bodyExpr("new.", fields);
  const watched = fields.length ? fields.map(q).join(", ") : q("_id");
  sqlite.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_ai`)} AFTER INSERT ON ${t} BEGIN
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`);
  sqlite.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_au`)} AFTER UPDATE OF ${watched} ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
    INSERT INTO ${f} (rowid, body) VALUES (new._rowid_, ${body});
  END`);
  sqlite.exec(`CREATE TRIGGER ${q(`${ftsTable(name)}_ad`)} AFTER DELETE ON ${t} BEGIN
    DELETE FROM ${f} WHERE rowid = old._rowid_;
  END`);
}

/** Drops the index and its triggers of a collection (no-op when there is none). */
export function dropFtsObjects(sqlite: Database, name: string): void {
  dropTriggers(sqlite, name);
  sqlite.exec(`DROP TABLE IF EXISTS ${q(ftsTable(name))}`);
}

function buildIndex(sqlite: Database, col: Collection): string[] {
  const fields = textFields(col.fields);
  dropFtsObjects(sqlite, col.name);
  sqlite.exec(`CREATE VIRTUAL TABLE ${q(ftsTable(col.name))} USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')`);
  sqlite.exec(
    `INSERT INTO ${q(ftsTable(col.name))} (rowid, body) SELECT _rowid_, ${bodyExpr("", fields)} FROM ${q(col.name)}`,
  );
  createTriggers(sqlite, col.name, fields);
  return fields;
}

/** Active (not soft-deleted) records in the index. */
function indexedCount(sqlite: Database, name: string): number {
  const t = q(name);
  const f = q(ftsTable(name));
  return sqlite
    .query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM ${f} JOIN ${t} ON ${t}._rowid_ = ${f}.rowid WHERE ${t}."_deleted_at" IS NULL`)
    .get()!.n;
}

/** `GET /admin/collections/:name/fts`. */
export function ftsStatus(ctx: AppContext, name: string): FtsStatus {
  const col = requireCollection(ctx, name);
  if (!col.fts.enabled) return { enabled: false, fields: [], indexed_records: 0 };
  return { enabled: true, fields: col.fts.fields, indexed_records: indexedCount(ctx.sqlite, col.name) };
}

/** `POST …/fts`: creates the index from every record; `created` is false when it already existed. */
export function enableFts(ctx: AppContext, name: string): { status: FtsStatus; created: boolean } {
  const col = requireCollection(ctx, name);
  if (col.fts.enabled) return { status: ftsStatus(ctx, name), created: false };
  inTransaction(ctx, () => {
    const fields = buildIndex(ctx.sqlite, col);
    saveCollectionRow(ctx, { ...col, fts: { enabled: true, fields }, updatedAt: ctx.clock.now() });
  });
  return { status: ftsStatus(ctx, name), created: true };
}

/** `DELETE …/fts`: drops the index and its triggers. */
export function disableFts(ctx: AppContext, name: string): { enabled: false } {
  const col = requireCollection(ctx, name);
  inTransaction(ctx, () => {
    dropFtsObjects(ctx.sqlite, col.name);
    if (col.fts.enabled) saveCollectionRow(ctx, { ...col, fts: { enabled: false, fields: [] }, updatedAt: ctx.clock.now() });
  });
  return { enabled: false };
}

/**
 * Called (inside the writer's transaction) after new fields were added: when the collection
 * has an index, new text fields join it. Returns the `fts` member to store.
 */
export function ftsAfterNewFields(ctx: AppContext, col: Collection, fields: FieldDef[]): FtsState {
  if (!col.fts.enabled) return col.fts;
  const text = textFields(fields);
  if (text.length === col.fts.fields.length) return col.fts;
  createTriggers(ctx.sqlite, col.name, text);
  return { enabled: true, fields: text };
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

/** True for the error SQLite raises for a MATCH expression it cannot parse. */
export function isFtsQueryError(err: unknown): boolean {
  return err instanceof Error && /fts5|unknown special query|no such column/i.test(err.message);
}
