import type { AppContext } from "../context.ts";
import { q } from "../collections/ddl.ts";
import { SYSTEM_FIELDS, type Collection, type FieldDef } from "../collections/types.ts";

export type RecordJson = Record<string, unknown>;

/** The SELECT list of a collection: system fields then user fields, all quoted. */
export function selectList(col: Collection, fields?: string[]): string {
  const names = fields ?? [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)];
  return names.map(q).join(", ");
}

/** Converts a stored row into the record's JSON: booleans as true/false, json fields parsed. */
export function decodeRow(col: Collection, row: Record<string, unknown>): RecordJson {
  for (const f of col.fields) {
    const v = row[f.name];
    if (v === null || v === undefined) continue;
    if (f.type === "boolean") row[f.name] = v === 1 || v === true;
    else if (f.type === "json" && typeof v === "string") {
      try {
        row[f.name] = JSON.parse(v);
      } catch {
        // A value written by another tool that is not JSON: return it as stored.
      }
    }
  }
  return row;
}

/** Converts a JSON value into what its column stores. */
export function encodeValue(type: FieldDef["type"], v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v ? 1 : 0;
  if (type === "json") return JSON.stringify(v);
  return v as string | number;
}

/** The user fields of a body: system fields (anything starting with `_`) are ignored. */
export function userFields(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!k.startsWith("_")) out[k] = body[k];
  return out;
}

/** The by-id SELECT of each catalog entry (entries are replaced, never changed, on a schema change). */
const fetchSql = new WeakMap<Collection, string>();

/** Reads one record by id (soft-deleted ones too); null when there is none. */
export function fetchRecord(ctx: AppContext, col: Collection, id: string): RecordJson | null {
  if (typeof id !== "string" || id.length > 64) return null;
  let sql = fetchSql.get(col);
  if (sql === undefined) fetchSql.set(col, (sql = `SELECT ${selectList(col)} FROM ${q(col.name)} WHERE "_id" = ?`));
  const row = ctx.sqlite.query<Record<string, unknown>, [string]>(sql).get(id);
  return row ? decodeRow(col, row) : null;
}
