import { systemClock, type Clock } from "./clock.ts";
import { createCatalog, type Catalog } from "./collections/catalog.ts";
import type { Config } from "./config.ts";
import { AppError } from "./errors.ts";
import { migrate } from "./db/migrate.ts";
import { openDatabase } from "./db/open.ts";
import { SqliteEngine } from "./db/sqlite.ts";
import type { Engine } from "./db/engine.ts";
import { createLogger, type Logger } from "./log.ts";
import { createMailer, type Mailer } from "./mail/mailer.ts";
import { getSetting } from "./settings/settings.ts";
import type { HookSet } from "./hooks/types.ts";
import { createEventBus, type EventBus } from "./events/bus.ts";
import { closeRealtime } from "./realtime/hub.ts";
import { subscribeCommitHooks } from "./hooks/commit.ts";

/** Everything a service needs, passed explicitly. Tests build their own. */
export interface AppContext {
  config: Config;
  /** The storage interface (src/db/engine.ts): every statement and transaction goes through it. */
  db: Engine;
  catalog: Catalog;
  clock: Clock;
  log: Logger;
  mailer: Mailer;
  hooks: HookSet;
  /** In-process caches that hold no authority (safe to lose). */
  cache: Map<string, unknown>;
  /** Change events of committed record writes (CONTRACT §5, §10). */
  events: EventBus;
}

export interface ContextOptions {
  clock?: Clock;
  log?: Logger;
  mailer?: Mailer;
  hooks?: HookSet;
}

/** Opens the database, runs migrations and loads the catalog. */
export function createContext(config: Config, opts: ContextOptions = {}): AppContext {
  // IMPORTANT: never fall back to the data directory's SQLite file when PostgreSQL was asked for: nodes
  // meant to share one database would each write their own.
  if (config.database.engine === "postgres")
    throw new AppError(
      400,
      "unsupported",
      "--database / DATABASE_URL (PostgreSQL) is not served by this version yet: unset it to keep the data in the data directory's SQLite database",
    );
  const sqlite = openDatabase(config.dbPath, { sync: config.sync });
  migrate(sqlite);
  const log = opts.log ?? createLogger({ format: config.logFormat, level: config.logLevel });
  const ctx: AppContext = {
    config,
    db: new SqliteEngine(sqlite, (err) => log.error("after-commit callback failed", { error: err })),
    catalog: createCatalog(),
    clock: opts.clock ?? systemClock,
    log,
    mailer: null as unknown as Mailer,
    hooks: opts.hooks ?? { list: [] },
    cache: new Map(),
    events: createEventBus((err, event) =>
      log.error("change listener failed", { collection: event.collection, action: event.action, error: err }),
    ),
  };
  ctx.mailer =
    opts.mailer ??
    createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, fromName: () => getSetting(ctx, "app_name"), log });
  // The catalog starts stale: the first request loads it.
  subscribeCommitHooks(ctx);
  return ctx;
}

/** Ends the realtime streams, closes the mailer and the database. */
export async function closeContext(ctx: AppContext): Promise<void> {
  closeRealtime(ctx);
  ctx.mailer.close();
  await ctx.db.close();
}
