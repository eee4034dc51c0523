import type { Catalog } from "./catalog/catalog.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { Engine } from "./db/engine.ts";
import type { ChangeEvent, EventBus } from "./events/bus.ts";
import type { HookSet } from "./hooks/types.ts";
import type { Logger } from "./log.ts";
import type { Mailer } from "./mail/mailer.ts";

// What every service is handed. Only its type lives here, low in the layers (it names what it holds and
// imports nothing that runs); app-context.ts, beside server.ts at the top, builds one and wires realtime,
// mail, the change relay and the commit hooks to it.

/** Everything a service needs, passed explicitly. Tests build their own (app-context.ts). */
export interface AppContext {
  config: Config;
  /** The storage interface (src/db/engine.ts): every statement and transaction goes through it. */
  db: Engine;
  /** The collections and relations as this process knows them (catalog/catalog.ts). */
  catalog: Catalog;
  clock: Clock;
  log: Logger;
  mailer: Mailer;
  hooks: HookSet;
  /** In-process caches that hold no authority (safe to lose). */
  cache: Map<string, unknown>;
  /** Change events of committed record writes (CONTRACT §5, §10). */
  events: EventBus;
  /**
   * Writes that go with a transaction's change events, as its last writes before it commits (the webhook
   * outbox, wired by app-context.ts): undefined when there is nothing to write, so inTransaction awaits nothing.
   */
  beforeCommit: ((ctx: AppContext, events: readonly ChangeEvent[]) => Promise<void> | undefined) | null;
}

export interface ContextOptions {
  /** The storage engine to use instead of the data directory's SQLite file (tests; openContext). */
  engine?: Engine;
  clock?: Clock;
  log?: Logger;
  mailer?: Mailer;
  hooks?: HookSet;
}
