import type { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { systemClock, type Clock } from "./clock.ts";
import { createCatalog, reloadCatalog, type Catalog } from "./collections/catalog.ts";
import type { Config } from "./config.ts";
import { migrate } from "./db/migrate.ts";
import { openDatabase } from "./db/open.ts";
import * as schema from "./db/schema.ts";
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
  sqlite: Database;
  db: BunSQLiteDatabase<typeof schema>;
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
  const sqlite = openDatabase(config.dbPath, { sync: config.sync });
  migrate(sqlite);
  const log = opts.log ?? createLogger({ format: config.logFormat, level: config.logLevel });
  const ctx: AppContext = {
    config,
    sqlite,
    db: drizzle(sqlite, { schema }),
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
  reloadCatalog(ctx);
  subscribeCommitHooks(ctx);
  return ctx;
}

/** Ends the realtime streams, closes the mailer and the database. */
export function closeContext(ctx: AppContext): void {
  closeRealtime(ctx);
  ctx.mailer.close();
  try {
    ctx.sqlite.exec("PRAGMA optimize");
  } catch {}
  ctx.sqlite.close();
}
