import type { Server } from "bun";
import { ensureAdminSecret, MIN_ADMIN_SECRET_LENGTH, type AdminSecretState } from "./auth/admin.ts";
import { ensureJwtKey } from "./auth/keys.ts";
import { normalizeStoredEmails } from "./users/stored-emails.ts";
import { closeContext, openContext } from "./app-context.ts";
import { type AppContext, type ContextOptions } from "./context.ts";
import type { Config } from "./config.ts";
import { startCheckpointer } from "./db/checkpointer.ts";
import { PUBLIC_URL_META, setMeta } from "./db/meta.ts";
import { untilReachable } from "./db/wait.ts";
import { setPhase } from "./ops/readiness.ts";
import { createApp } from "./http/app.ts";
import { createLogger } from "./log.ts";
import { resumeFtsBuilds } from "./search/fts.ts";
import { closeRealtime } from "./realtime/hub.ts";
import { listenForChanges } from "./realtime/relay.ts";
import { startWebhookWorker, type WebhookWorker } from "./webhooks/worker.ts";
import { watchHooks } from "./ops/hook-files.ts";

export interface Running {
  ctx: AppContext;
  server: Server<unknown>;
  url: string;
  /** Where the admin secret comes from, and the secret itself when it was generated at this (first) start. */
  secret: AdminSecretState;
  /** The webhook delivery worker of this process (CONTRACT §15). */
  webhooks: WebhookWorker;
  /**
   * Stops accepting, waits for in-flight requests (at most `graceMs`, default 10 s, so a client that
   * never finishes its request cannot hold the process), then closes the database.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
  /** Closes every open connection now; an ongoing `stop()` then goes on to close the database. */
  forceClose(): void;
}

/** The answer to a request that comes before the server has finished starting: GET /ready's own (readiness.ts). */
function startingUp(): Response {
  return Response.json({ error: "the server is starting", code: "unavailable", reason: "starting" }, { status: 503, headers: { "retry-after": "1" } });
}

/** A server already listens on the port asked for. */
export class PortInUseError extends Error {
  constructor(port: number) {
    super(`port ${port} is already in use`);
  }
}

export interface StartOptions extends ContextOptions {
  /** How long to keep trying a database that cannot be reached yet before giving up (`--wait-for-database`); 0: at once. */
  waitForDatabaseMs?: number;
}

/** Opens the data dir, prepares keys and the admin secret, and listens. */
export async function startServer(config: Config, opts: StartOptions = {}): Promise<Running> {
  // IMPORTANT: a short secret can be guessed (even at 10 tries a minute), and it opens everything.
  if (config.adminSecret !== null && config.adminSecret.length < MIN_ADMIN_SECRET_LENGTH)
    throw new Error(
      `ADMIN_SECRET is too short (${config.adminSecret.length} characters): it must be at least ${MIN_ADMIN_SECRET_LENGTH}. ` +
        "Use a long random value (e.g. 'openssl rand -base64 32'), or leave ADMIN_SECRET unset and one is generated.",
    );
  // The request log writes a line per request: buffered, flushed on a short timer and at exit.
  const log = opts.log ?? createLogger({ format: config.logFormat, level: config.logLevel, buffered: true });
  const { waitForDatabaseMs = 0, ...contextOptions } = opts;
  const url = config.database.engine === "postgres" ? config.database.url : undefined;
  const ctx = await untilReachable(() => openContext(config, { ...contextOptions, log }), { waitMs: waitForDatabaseMs, log, url });
  // Until the start-up below ends, every request, GET /ready included, is answered 503 `starting` (below).
  setPhase(ctx, "starting");
  await ensureJwtKey(ctx);
  await normalizeStoredEmails(ctx);
  const app = createApp(ctx);
  // Until the start-up below ends (admin secret, full-text builds, the change listener), every request is
  // answered 503: a load balancer's health check must not pass while an admin call would still be refused.
  // Outermost (Elysia applies the last wrap around the others), so not in the request log, whose lines
  // start after the start-up lines. Elysia asks the wrap on every request: afterwards it hands back the handler.
  let starting = true;
  app.wrap(((fn: unknown) => (starting ? startingUp : fn)) as Parameters<typeof app.wrap>[0]);
  try {
    app.listen({
      port: config.port,
      hostname: config.host,
      // IMPORTANT: Elysia turns SO_REUSEPORT on by default; with it a second server on the same port starts
      // too and the kernel splits requests between two databases. Off, the second one fails here instead.
      reusePort: false,
      // Bun's own limit would answer 413 with an empty body, so it is set out of reach: readJson streams
      // each body with a 16 MiB cap and answers 413 with CONTRACT's JSON, without buffering what it refuses.
      maxRequestBodySize: 2 ** 40,
      idleTimeout: 30,
    });
  } catch (err) {
    await closeContext(ctx);
    if ((err as { code?: string }).code === "EADDRINUSE") throw new PortInUseError(config.port);
    throw err;
  }
  // After listening (requests meanwhile get 503, above): a start that fails on a taken port must not
  // generate, store and never show a first admin secret.
  const secret = await ensureAdminSecret(ctx);
  const server = app.server!;
  // With port 0 the OS picks the port, so the default PUBLIC_URL/APP_URL (`http://localhost:0`)
  // are fixed up now that it is known: OAuth redirect addresses and mail links are built from them.
  if (config.port === 0) {
    const guessed = "http://localhost:0";
    if (ctx.config.publicUrl === guessed) ctx.config.publicUrl = `http://localhost:${server.port}`;
    if (ctx.config.appUrl === guessed) ctx.config.appUrl = ctx.config.publicUrl;
  }
  // Kept for the CLI, which works on the same data directory without knowing the server's port:
  // `baas settings list` shows the same OAuth redirect addresses as GET /admin/settings.
  await setMeta(ctx.db, PUBLIC_URL_META, ctx.config.publicUrl);
  await resumeFtsBuilds(ctx);
  // On PostgreSQL, the changes other nodes commit reach this node's realtime subscribers.
  const stopListening = await listenForChanges(ctx);
  const checkpointer = startCheckpointer(ctx.db, config.dbPath);
  // Webhooks are delivered by the serving processes only: the CLI writes to the outbox and leaves the sending to them.
  const webhooks = startWebhookWorker(ctx);
  // Hook files that change on disk are loaded again (CONTRACT §15).
  const stopWatchingHooks = watchHooks(ctx);
  setPhase(ctx, "serving");
  starting = false;
  let stopped = false;
  return {
    ctx,
    server,
    url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${server.port}`,
    secret,
    webhooks,
    async stop({ graceMs = 10_000 } = {}) {
      if (stopped) return;
      stopped = true;
      setPhase(ctx, "stopping");
      // Event streams never end by themselves: they are closed first, so the wait below is for real requests.
      closeRealtime(ctx);
      stopWatchingHooks();
      const force = setTimeout(() => void server.stop(true), graceMs);
      await server.stop(false);
      clearTimeout(force);
      let giveUp: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([ctx.mailer.flush().catch(() => {}), new Promise((r) => (giveUp = setTimeout(r, graceMs)))]);
      clearTimeout(giveUp);
      // Attempts in flight get a moment to end; the rest are due again at the next start (or on another node).
      await webhooks.stop({ graceMs: Math.min(graceMs, 2_000) });
      await checkpointer?.stop();
      // Bounded: with the database gone, the stop must not wait for it.
      let listenTimer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([stopListening().catch(() => {}), new Promise((r) => (listenTimer = setTimeout(r, 2_000)))]);
      clearTimeout(listenTimer);
      await closeContext(ctx);
    },
    forceClose() {
      void server.stop(true);
    },
  };
}
