import { createCatalog } from "./catalog/catalog.ts";
import { systemClock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { AppContext, ContextOptions } from "./context.ts";
import type { Engine } from "./db/engine.ts";
import { migratePostgres } from "./db/migrate-postgres.ts";
import { migrate } from "./db/migrate.ts";
import { openDatabase } from "./db/open.ts";
import { openPostgres } from "./db/postgres.ts";
import { SqliteEngine } from "./db/sqlite.ts";
import { createEventBus } from "./events/bus.ts";
import { subscribeCommitHooks } from "./hooks/commit.ts";
import { createLogger, type Logger } from "./log.ts";
import { createMailer, type Mailer } from "./mail/mailer.ts";
import { closeRealtime } from "./realtime/hub.ts";
import { relayFlushed, startChangeRelay } from "./realtime/relay.ts";
import { getSetting } from "./settings/settings.ts";
import { writeOutbox } from "./webhooks/outbox.ts";

// The construction of the app's context (context.ts has its type), at the top of the layers beside server.ts:
// it opens the database and wires what listens to committed changes (the hook files' onCommit, the change
// relay to other nodes), so that no service imports realtime or the relay.

/**
 * Opens the configured database (the data directory's SQLite file, or PostgreSQL when `--database` /
 * DATABASE_URL names one), runs the migrations and builds the context.
 */
export async function openContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  if (opts.engine || config.database.engine !== "postgres") return createContext(config, opts);
  const { url, poolSize, statementTimeoutMs } = config.database;
  const log = opts.log ?? createLogger({ format: config.logFormat, level: config.logLevel });
  const engine = openPostgres({
    url,
    poolSize,
    statementTimeoutMs,
    onCallbackError: (err) => log.error("after-commit callback failed", { error: err }),
  });
  try {
    await migratePostgres(engine);
  } catch (err) {
    await engine.close().catch(() => {});
    throw err;
  }
  return createContext(config, { ...opts, log, engine });
}

/**
 * Builds the context on `opts.engine`, else on the data directory's SQLite file (migrated here).
 * A PostgreSQL database is opened by openContext, which migrates it first.
 */
export function createContext(config: Config, opts: ContextOptions = {}): AppContext {
  // IMPORTANT: never fall back to the data directory's SQLite file when PostgreSQL was asked for: nodes
  // meant to share one database would each write their own.
  if (!opts.engine && config.database.engine === "postgres") throw new Error("createContext: open a PostgreSQL database with openContext");
  const log = opts.log ?? createLogger({ format: config.logFormat, level: config.logLevel });
  const db = opts.engine ?? openSqlite(config, log);
  const hooks = opts.hooks ?? { list: [] };
  const ctx: AppContext = {
    config,
    db,
    catalog: createCatalog(db, hooks),
    clock: opts.clock ?? systemClock,
    log,
    mailer: null as unknown as Mailer,
    hooks,
    cache: new Map(),
    events: createEventBus((err, event) =>
      log.error("change listener failed", { collection: event.collection, action: event.action, error: err }),
    ),
    // The change events webhooks subscribe to go to their outbox inside the change's transaction.
    beforeCommit: writeOutbox,
  };
  ctx.mailer =
    opts.mailer ??
    createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, fromName: () => getSetting(ctx, "app_name"), log });
  // The catalog starts stale: the first request loads it.
  subscribeCommitHooks(ctx.hooks, ctx.events, ctx.log);
  // On PostgreSQL other nodes (and CLI commands) share the database: they learn of this one's changes.
  startChangeRelay(ctx);
  return ctx;
}

function openSqlite(config: Config, log: Logger): Engine {
  const sqlite = openDatabase(config.dbPath, { sync: config.sync });
  migrate(sqlite);
  return new SqliteEngine(sqlite, (err) => log.error("after-commit callback failed", { error: err }));
}

/** Ends the realtime streams, closes the mailer and the database. */
export async function closeContext(ctx: AppContext): Promise<void> {
  closeRealtime(ctx);
  ctx.mailer.close();
  await relayFlushed(ctx);
  await ctx.db.close();
}
