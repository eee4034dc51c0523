import { noteCommit } from "../collections/catalog.ts";
import type { AppContext } from "../context.ts";
import { mapSqliteError } from "./sqlite-errors.ts";

/**
 * Runs `fn` in one write transaction (a savepoint when already inside one).
 * Change events staged inside are published when the outermost transaction commits
 * and dropped with a rolled-back savepoint or transaction. The staging queue is marked and cut
 * back while the transaction holds the engine's lock, so another request's events are never touched.
 * On failure the catalog cache is invalidated, so no column a rolled-back
 * transaction added stays in memory.
 */
export async function inTransaction<T>(ctx: AppContext, fn: () => Promise<T>): Promise<T> {
  const outer = !ctx.db.inTransaction();
  if (outer && ctx.db.dialect === "postgres") return await concurrentTransaction(ctx, fn);
  try {
    return await ctx.db.transaction(async () => {
      // Holding the lock, nothing else is staging: what is queued at the start of an outermost
      // transaction is left from one whose COMMIT failed, and never goes out.
      if (outer) ctx.events.rollbackTo(0);
      const mark = ctx.events.mark();
      try {
        if (!outer) return await fn();
        // Committed: other contexts of this process re-check the database at their next read, and the
        // staged change events go out, in commit order.
        ctx.db.afterCommit(() => {
          noteCommit(ctx);
          ctx.events.commit();
        });
        ctx.catalog.inWriteTx = true;
        try {
          return await fn();
        } finally {
          ctx.catalog.inWriteTx = false;
          ctx.catalog.checkedInTx = false;
        }
      } catch (err) {
        ctx.events.rollbackTo(mark);
        throw err;
      }
    });
  } catch (err) {
    ctx.catalog.stale = true;
    throw mapSqliteError(err);
  }
}

/**
 * The outermost transaction on an engine whose transactions run side by side in one process
 * (PostgreSQL): its change events are staged in a queue of its own, published by its commit only.
 * The engine may run `fn` again after a serialization failure: each run starts with an empty queue.
 */
async function concurrentTransaction<T>(ctx: AppContext, fn: () => Promise<T>): Promise<T> {
  try {
    return await ctx.db.transaction(() =>
      ctx.events.isolated(async (queue) => {
        ctx.db.afterCommit(() => {
          noteCommit(ctx);
          ctx.events.commit(queue);
        });
        return await fn();
      }),
    );
  } catch (err) {
    ctx.catalog.stale = true;
    throw mapSqliteError(err);
  }
}
