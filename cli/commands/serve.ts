import type { Command } from "commander";
import { loadConfig, type Config } from "../../src/config.ts";
import type { AdminSecretState } from "../../src/auth/admin.ts";
import { formatLine, writeLineNow } from "../../src/log.ts";
import { startServer } from "../../src/server.ts";
import { UsageError, unreachable } from "../run.ts";

/** Says where the admin secret comes from (never the secret itself); `store` is where its hash is kept. */
function secretSourceLine(s: AdminSecretState, store: string): string {
  if (s.source === "env")
    return s.replacedStored
      ? `admin secret: from ADMIN_SECRET, which replaces the different secret stored in ${store} (admin tokens issued before no longer work)`
      : "admin secret: from ADMIN_SECRET (rotate it by changing ADMIN_SECRET and restarting)";
  if (s.source === "generated") return "admin secret: generated at this first start (printed above, only its hash is stored)";
  return `admin secret: the one stored in ${store} (ADMIN_SECRET is not set; change it with 'baas admin rotate-secret')`;
}

/** `baas serve`: runs the HTTP server until SIGINT/SIGTERM, then stops gracefully. */
export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("start the HTTP server")
    .option("--port <n>", "port to listen on (env PORT, default 8090)")
    .option("--host <h>", "interface to bind (env HOST, default 0.0.0.0)")
    .option("--data <dir>", "data directory, created if missing (env DATA_DIR, default ./baas_data)")
    .option("--database <url>", "a PostgreSQL database instead of the data directory's SQLite file (env DATABASE_URL)")
    .option("--sync <mode>", "normal|full: full makes each commit power-loss durable (env SQLITE_SYNC)")
    .option("--log-format <format>", "text|json: format of the request log on stderr (env LOG_FORMAT, default text)")
    .option("--trust-proxy <list>", "addresses or CIDR ranges of your reverse proxies, comma-separated: their X-Forwarded-For names the client (env TRUST_PROXY)")
    .option("--wait-for-database <seconds>", "keep trying a PostgreSQL database that cannot be reached yet this long before giving up (env BAAS_WAIT_FOR_DATABASE, default 30; 0: give up at once)")
    // The program's --data is serve's own --data here, and its --json prints nothing for a server: not listed.
    .configureHelp({ showGlobalOptions: false })
    .addHelpText(
      "after",
      `
Also read from the environment: ADMIN_SECRET, PUBLIC_URL, APP_URL, SMTP_URL, MAIL_FROM, LOG_LEVEL
(error|warn|info|debug, default info), CORS_ORIGINS, LOCKOUT_MAX_ATTEMPTS, LOCKOUT_DURATION_MS, HOOKS_DIR,
TRUST_PROXY (the same as --trust-proxy), BAAS_WAIT_FOR_DATABASE (the same as --wait-for-database).
A port already in use is an error (exit 1), and so is a database still unreachable after the wait.

Examples:
  $ baas serve --port 8090 --data ./baas_data
  $ LOG_LEVEL=warn baas serve --log-format json
  $ baas serve --trust-proxy 127.0.0.1,::1      # behind nginx on the same machine`,
    )
    .action(async (opts: { port?: string; host?: string; data?: string; database?: string; sync?: string; logFormat?: string; trustProxy?: string; waitForDatabase?: string }) => {
      const { data: globalData, database: globalDatabase, storage, json } = program.opts() as { data?: string; database?: string; storage?: string; json?: boolean };
      if (json) throw new UsageError("serve has no --json output (for a JSON request log use --log-format json)");
      const { waitForDatabase, ...configOpts } = opts;
      const config = loadConfig({ ...configOpts, data: opts.data ?? globalData, database: opts.database ?? globalDatabase, storage });
      const waitForDatabaseMs = waitSeconds(waitForDatabase ?? process.env.BAAS_WAIT_FOR_DATABASE) * 1000;
      const { loadHooks } = await import("../../src/hooks/load.ts");
      const hooks = await loadHooks(config.hooksDir);
      // Signals are caught from before the port opens: a SIGTERM sent as soon as the server answers (or says it
      // listens) must stop it gracefully, not kill it. One that comes during the start is acted on right after it.
      let stopRequested: string | null = null;
      let stop = (signal: string) => void (stopRequested ??= signal);
      process.on("SIGINT", () => stop("SIGINT"));
      process.on("SIGTERM", () => stop("SIGTERM"));
      const running = await startServer(config, { hooks, waitForDatabaseMs }).catch((err) => {
        throw unreachable(config, err);
      });
      const { secret } = running;
      if (secret.generated) {
        // Through the same synchronous path as the lines after it, so it cannot come out after them.
        writeLineNow(
          `\n  Admin secret (shown once, store it now):\n\n    ${secret.generated}\n\n` +
            `  Use it as 'Authorization: Bearer <secret>' on /api/v1/admin, or log in at ${config.publicUrl}/_/\n`,
        );
      }
      // Start and stop lines are written whatever LOG_LEVEL says (people and scripts wait for them), in the log's format.
      // Written at once, after the log lines still buffered, so stderr keeps the order things happened in.
      const say = (msg: string) => writeLineNow(config.logFormat === "json" ? formatLine("json", "info", msg) : msg);
      say(secretSourceLine(secret, config.database.engine === "postgres" ? "the database" : "the data directory"));
      // The executable starts with the JIT held back (the build's --compile-jit-policy): code that runs once while
      // starting is not worth compiling. Serving is what runs again and again: the normal policy from here on.
      Bun.unsafe.setJITPolicy(1);
      say(`baas listening on http://${config.host}:${running.server.port} (${storageLabel(config)})`);
      // Several nodes share a PostgreSQL database; a folder of files is this machine's alone (CONTRACT §14).
      if (config.database.engine === "postgres" && config.storage.kind === "local")
        say(`warning: files are stored in ${config.storage.dir} on this machine; several nodes on one PostgreSQL database need shared storage: --storage s3://bucket/prefix`);
      let stopping = false;
      stop = (signal: string) => {
        if (stopping) {
          // A second signal: drop the connections still open; the database is still closed cleanly.
          say(`received ${signal} again, closing open connections now`);
          running.forceClose();
          return;
        }
        stopping = true;
        say(`received ${signal}, finishing in-flight requests...`);
        void running.stop().then(() => process.exit(0));
      };
      if (stopRequested) stop(stopRequested);
    });
}

/** Longest wait for an unreachable database, in seconds. */
export const MAX_WAIT_FOR_DATABASE_S = 3600;

/** `--wait-for-database` / BAAS_WAIT_FOR_DATABASE as seconds (30 when unset); anything but a whole number 0..3600 is a usage error. */
function waitSeconds(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return 30;
  const text = raw.trim();
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > MAX_WAIT_FOR_DATABASE_S)
    throw new UsageError(`--wait-for-database (BAAS_WAIT_FOR_DATABASE) must be a whole number of seconds from 0 to ${MAX_WAIT_FOR_DATABASE_S}, got "${raw}"`);
  return n;
}

/** Where the data lives, for the listening line: never the database URL's password. */
function storageLabel(config: Config): string {
  if (config.database.engine === "sqlite") return `data: ${config.dataDir}`;
  const url = new URL(config.database.url);
  return `database: postgres://${url.host}${url.pathname}`;
}
