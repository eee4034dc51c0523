import type { AppContext } from "../context.ts";
import { mapSqliteError } from "./sqlite-errors.ts";

/**
 * Runs `fn` in one write transaction (a savepoint when already inside one).
 * On failure the catalog cache is invalidated, so no column a rolled-back
 * transaction added stays in memory.
 */
export function inTransaction<T>(ctx: AppContext, fn: () => T): T {
  try {
    if (ctx.sqlite.inTransaction) return ctx.sqlite.transaction(fn)();
    return ctx.sqlite
      .transaction(() => {
        ctx.catalog.inWriteTx = true;
        try {
          return fn();
        } finally {
          ctx.catalog.inWriteTx = false;
          ctx.catalog.checkedInTx = false;
        }
      })
      .immediate();
  } catch (err) {
    ctx.catalog.stale = true;
    throw mapSqliteError(err);
  }
}
