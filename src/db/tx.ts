import { noteCommit } from "../collections/catalog.ts";
import type { AppContext } from "../context.ts";
import { mapSqliteError } from "./sqlite-errors.ts";

/**
 * Runs `fn` in one write transaction (a savepoint when already inside one).
 * Change events staged inside are published when the outermost transaction commits
 * and dropped with a rolled-back savepoint or transaction.
 * On failure the catalog cache is invalidated, so no column a rolled-back
 * transaction added stays in memory.
 */
export function inTransaction<T>(ctx: AppContext, fn: () => T): T {
  const mark = ctx.events.mark();
  try {
    if (ctx.sqlite.inTransaction) return ctx.sqlite.transaction(fn)();
    const result = ctx.sqlite
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
    // Committed: other contexts of this process re-check the database at their next read, and the
    // staged change events go out, in commit order.
    noteCommit(ctx);
    ctx.events.commit();
    return result;
  } catch (err) {
    ctx.events.rollbackTo(mark);
    ctx.catalog.stale = true;
    throw mapSqliteError(err);
  }
}
