import type { AppContext } from "../context.ts";
import { q } from "../db/ident.ts";
import { SYSTEM_FIELDS, type Collection } from "../catalog/types.ts";
import { listParam } from "../db/condition.ts";

/** A record as the API returns it: system fields, user fields, and what relations add. */
export type RecordJson = Record<string, unknown>;

/** The SELECT list of a collection: system fields then user fields, all quoted. */
export function selectList(col: Collection, fields?: string[]): string {
  const names = fields ?? [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)];
  return names.map(q).join(", ");
}

/**
 * Converts a stored row into the record's JSON: booleans as true/false, json fields parsed. A row of some
 * columns only (`fields=`) lacks the others: a field named like an Object.prototype member (`valueOf`) must
 * not be read from the prototype and added.
 */
export function decodeRow(col: Collection, row: Record<string, unknown>): RecordJson {
  for (const f of col.fields) {
    const v = row[f.name];
    if (v === null || v === undefined || !Object.hasOwn(row, f.name)) continue;
    if (f.type === "boolean") row[f.name] = v === 1 || v === true;
    else if ((f.type === "json" || (f.type === "file" && (v as string)[0] === "[")) && typeof v === "string") {
      try {
        row[f.name] = JSON.parse(v);
      } catch {
        // A value written by another tool that is not JSON: return it as stored.
      }
    }
  }
  return row;
}

/** The by-id SELECT of each catalog entry (entries are replaced, never changed, on a schema change). */
const fetchSql = new WeakMap<Collection, string>();

/**
 * Reads one record by id (soft-deleted ones too); null when there is none. `batched`: a read of its own
 * (not one a write decides on), which may run with the other reads of this event-loop turn (Engine.getBatched).
 */
export async function fetchRecord(ctx: AppContext, col: Collection, id: string, batched = false): Promise<RecordJson | null> {
  if (typeof id !== "string" || id.length > 64) return null;
  let sql = fetchSql.get(col);
  if (sql === undefined) fetchSql.set(col, (sql = `SELECT ${selectList(col)} FROM ${q(col.name)} WHERE "_id" = ?`));
  const row = await (batched && ctx.db.getBatched ? ctx.db.getBatched<Record<string, unknown>>(sql, [id]) : ctx.db.get<Record<string, unknown>>(sql, [id]));
  return row ? decodeRow(col, row) : null;
}

/** Which of `ids` are records of `col` now (soft-deleted ones included), in one statement. */
export async function presentIds(ctx: AppContext, col: Collection, ids: readonly string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await ctx.db.all<{ id: string }>(`SELECT "_id" AS id FROM ${q(col.name)} WHERE "_id" ${ctx.db.sql.inList}`, [listParam(ids)]);
  return new Set(rows.map((r) => r.id));
}

/** The records of `col` whose `field` holds `id` (only active ones with `activeOnly`), by `_id`. */
export async function recordsWithValue(ctx: AppContext, col: Collection, field: string, id: string, activeOnly: boolean): Promise<RecordJson[]> {
  const rows = await ctx.db.all<Record<string, unknown>>(`SELECT ${selectList(col)} FROM ${q(col.name)} WHERE ${q(field)} = ?${activeOnly ? ` AND "_deleted_at" IS NULL` : ""} ORDER BY "_id"`, [id]);
  return rows.map((r) => decodeRow(col, r));
}

/** How many active records of `table` have `field` = `id`. */
export async function countActiveWithValue(ctx: AppContext, table: string, field: string, id: string): Promise<number> {
  return (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q(table)} WHERE ${q(field)} = ? AND "_deleted_at" IS NULL`, [id]))!.n;
}

/** How many active records `table` holds, and the latest `_updated_at` among them. */
export async function activeRowStats(ctx: AppContext, table: string): Promise<{ n: number; last: number | null }> {
  return (await ctx.db.get<{ n: number; last: number | null }>(`SELECT COUNT(*) AS n, MAX("_updated_at") AS last FROM ${q(table)} WHERE "_deleted_at" IS NULL`))!;
}

/** The size of a record as JSON, estimated without writing it (strings by their length): what holding it costs. */
export function recordBytes(record: Record<string, unknown>): number {
  let n = 2;
  for (const k in record) {
    const v = record[k];
    n += k.length + 4;
    if (typeof v === "string") n += v.length + 2;
    else if (v === null || typeof v !== "object") n += 8;
    else n += JSON.stringify(v)?.length ?? 4;
  }
  return n;
}
