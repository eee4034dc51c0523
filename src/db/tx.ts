import { noteCommit } from "../collections/catalog.ts";
import type { AppContext } from "../context.ts";
import type { TransactionOptions } from "./engine.ts";
import { mapSqliteError } from "./sqlite-errors.ts";

/**
 * Runs `fn` in one write transaction (a savepoint when already inside one).
 * Change events staged inside are published when the outermost transaction commits
 * and dropped with a rolled-back savepoint or transaction. Each outermost transaction stages its
 * events in a queue of its own, so transactions that share one COMMIT (SQLite's group commit) or run
 * side by side (PostgreSQL) publish exactly their own events, and only once committed.
 * On failure the catalog cache is invalidated, so no column a rolled-back
 * transaction added stays in memory: on SQLite at once, as `fn` fails, since the engine runs the next
 * transaction of its group before the failure reaches the caller (one that added another field would
 * otherwise save the catalog row with the rolled-back one in it); so it is before the engine runs `fn`
 * again (a serialization failure, or a group of `opts.group` transactions that one member's failure rolled back: see TransactionOptions).
 */
export async function inTransaction<T>(ctx: AppContext, fn: () => Promise<T>, opts?: TransactionOptions): Promise<T> {
  const outer = !ctx.db.inTransaction();
  try {
    if (!outer)
      return await ctx.db.transaction(async () => {
        const mark = ctx.events.mark();
        try {
          return await fn();
        } catch (err) {
          ctx.events.rollbackTo(mark);
          if (ctx.db.dialect === "sqlite") ctx.catalog.stale = true;
          throw err;
        }
      });
    // The engine may run `fn` again after a rollback (PostgreSQL): each run starts with an empty queue.
    let runs = 0;
    return await ctx.db.transaction(() => {
      if (runs++) ctx.catalog.stale = true;
      return ctx.events.isolated(async (queue) => {
        // Committed: other contexts of this process re-check the database at their next read, and the
        // staged change events go out, in commit order.
        ctx.db.afterCommit(() => {
          noteCommit(ctx);
          ctx.events.commit(queue);
        });
        // SQLite runs one write transaction at a time: the catalog is checked once per transaction.
        if (ctx.db.dialect !== "sqlite") return await fn();
        ctx.catalog.inWriteTx = true;
        try {
          return await fn();
        } catch (err) {
          ctx.catalog.stale = true;
          throw err;
        } finally {
          ctx.catalog.inWriteTx = false;
          ctx.catalog.checkedInTx = false;
        }
      });
    }, opts);
  } catch (err) {
    ctx.catalog.stale = true;
    throw mapSqliteError(err);
  }
}
