/**
 * The few SQL spellings that differ between engines and are used by code outside `query/`
 * (see "what a second engine must provide" in src/db/engine.ts). These are SQLite's.
 */

import type { Engine } from "../db/engine.ts";

const IN_LISTS: Record<Engine["dialect"], string> = {
  sqlite: "IN (SELECT value FROM json_each(?))",
  postgres: "IN (SELECT jsonb_array_elements_text(CAST(CAST(? AS text) AS jsonb)))",
};

/** `<expr> ${inList(db)}` with one parameter, `listParam(values)`: the (text) expression is one of the values. */
export function inList(db: Engine): string {
  return IN_LISTS[db.dialect];
}

/** The one parameter of IN_LIST. */
export function listParam(values: readonly string[]): string {
  return JSON.stringify(values);
}

/**
 * The column that orders rows of a system table by insertion, as a last tie-break: SQLite's implicit
 * rowid; on PostgreSQL an identity column of that name in the tables listed this way.
 */
export const INSERT_ORDER = "rowid";
