import { markTxCatalogStale, noteCommit } from "./catalog/catalog.ts";
import type { AppContext } from "./context.ts";
import type { TransactionOptions } from "./db/engine.ts";

// Above the storage engine, below every service: a database transaction together with what this process
// ties to it (the change events it stages, the catalog view it changes).

/**
 * Runs `fn` in one write transaction (a savepoint when already inside one).
 * Change events staged inside are published when the outermost transaction commits
 * and dropped with a rolled-back savepoint or transaction; those a webhook subscribes to are written to
 * its outbox by the transaction itself, before it commits. Each outermost transaction stages its
 * events in a queue of its own, so transactions that share one COMMIT (SQLite's group commit) or run
 * side by side (PostgreSQL) publish exactly their own events, and only once committed.
 * What a transaction changes of the catalog only its own lookups see (see catalogView) until it commits.
 * When `fn` fails, the transaction's view of the catalog is read again at its next lookup: the failure
 * rolls back what `fn` changed, and other work may go on in the same database transaction (the next
 * savepoint; on SQLite the next member of its group; see TransactionOptions).
 */
export async function inTransaction<T>(ctx: AppContext, fn: () => Promise<T>, opts?: TransactionOptions): Promise<T> {
  const outer = !ctx.db.inTransaction();
  const rolledBack = (err: unknown) => {
    markTxCatalogStale(ctx);
    throw err;
  };
  // The engine maps its own errors (a broken constraint, a busy database) to AppErrors.
  if (!outer)
    return await ctx.db.transaction(async () => {
      const mark = ctx.events.mark();
      try {
        return await fn();
      } catch (err) {
        ctx.events.rollbackTo(mark);
        return rolledBack(err);
      }
    });
  return await ctx.db.transaction(
    () =>
      ctx.events.isolated(async (queue) => {
        // Committed: other contexts of this process re-check the database at their next read, and the
        // staged change events go out, in commit order.
        ctx.db.afterCommit(() => {
          noteCommit(ctx);
          ctx.events.commit(queue);
        });
        const result = await fn().catch(rolledBack);
        // The events webhooks subscribe to go to the outbox in this transaction, as its last writes (nothing
        // to do, and nothing awaited, without a webhook).
        const outbox = queue.length && ctx.beforeCommit ? ctx.beforeCommit(ctx, queue) : undefined;
        if (outbox) await outbox.catch(rolledBack);
        return result;
      }),
    opts,
  );
}
