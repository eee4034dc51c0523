import type { Engine } from "../db/engine.ts";

// Spellings of the engine's dialect (Engine.sql) under the names system-table code outside query/ imports.

/** `<expr> ${inList(db)}` with one parameter, `listParam(values)`: the (text) expression is one of the values (Dialect.inList). */
export function inList(db: Engine): string {
  return db.sql.inList;
}

export { listParam } from "../db/condition.ts";

/**
 * The column that orders rows of a system table by insertion, as a last tie-break (Dialect.insertOrder, which
 * both engines spell `rowid`: SQLite's implicit rowid; on PostgreSQL an identity column of that name).
 */
export const INSERT_ORDER = "rowid";
