/**
 * The few SQL spellings that differ between engines and are used by code outside `query/`
 * (see "what a second engine must provide" in src/db/engine.ts). These are SQLite's.
 */

/** `<expr> ${IN_LIST}` with one parameter, `listParam(values)`: the expression is one of the values. */
export const IN_LIST = "IN (SELECT value FROM json_each(?))";

/** The one parameter of IN_LIST. */
export function listParam(values: readonly string[]): string {
  return JSON.stringify(values);
}

/** The column that orders rows of a system table by insertion, as a last tie-break. */
export const INSERT_ORDER = "rowid";
