#!/usr/bin/env bun
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { ConfigError } from "../src/config.ts";
import { AppError, ValidationError } from "../src/errors.ts";
import { VERSION } from "../src/version.ts";
import { registerServe } from "./commands/serve.ts";
import { UsageError } from "./run.ts";

const program = new Command();
const HELP_HINT = "(run 'baas help <command>' for usage and examples)";
const JSON_OUT = process.argv.includes("--json");

program
  .name("baas")
  .description("baas: a Backend-as-a-Service in one executable")
  .version(VERSION, "-v, --version")
  .option("--data <dir>", "data directory (env DATA_DIR, default ./baas_data)")
  .option("--database <url>", "a PostgreSQL database (postgres://user:pass@host:port/db) instead of the data directory's SQLite file (env DATABASE_URL)")
  .option("--storage <url>", "where uploaded files are: s3://bucket/prefix or a folder (env STORAGE_URL, default <data>/storage)")
  .option("--json", "print machine-readable JSON")
  .configureHelp({ showGlobalOptions: true })
  .showHelpAfterError(HELP_HINT)
  .exitOverride()
  // With --json a usage error that the argument parser reports is the same JSON as ours: { error, code: "usage" }.
  .configureOutput({
    outputError: (text, write) => write(JSON_OUT ? JSON.stringify({ error: text.trim().replace(/^error: /, ""), code: "usage" }) + "\n" : text),
    writeErr: (text) => void (JSON_OUT && text.trim() === HELP_HINT ? undefined : process.stderr.write(text)),
  })
  .addHelpText(
    "after",
    `
Exit codes: 0 ok, 1 error (message on stderr), 2 usage (unknown command, missing argument, bad option).
Every command works on the data directory (or the --database) directly, also while a server runs on
it. Only serve creates a data directory; other commands exit 1 when it does not exist.

Environment (flags win):
  DATA_DIR              data directory (default ./baas_data)
  DATABASE_URL          PostgreSQL database to use instead of <data>/baas.db (several servers may share it)
  DB_POOL_SIZE, DB_STATEMENT_TIMEOUT_MS  PostgreSQL: connections per process (10), statement timeout (30000)
  PORT, HOST            serve: port (default 8090) and interface (default 0.0.0.0)
  SQLITE_SYNC           serve: normal|full
  ADMIN_SECRET          when set, it is the admin secret (else one is generated at the first start);
                        schema and fields with --url send it to the server
  BAAS_URL              schema and fields: a running server to work on instead of the data directory
  PUBLIC_URL, APP_URL   the server's public address and the frontend's (links in mails)
  SMTP_URL, MAIL_FROM   mail delivery (without SMTP_URL, mails go to the server log)
  LOG_FORMAT, LOG_LEVEL serve: text|json, error|warn|info|debug (default text, info)
  CORS_ORIGINS          allowed browser origins, comma-separated (default *)
  TRUST_PROXY           serve: your reverse proxies (addresses or CIDR ranges): X-Forwarded-For names the client
  LOCKOUT_MAX_ATTEMPTS, LOCKOUT_DURATION_MS, HOOKS_DIR  see docs/CLI.md

Examples:
  $ baas serve --port 8090 --data ./baas_data
  $ baas collections create posts --read public --create authenticated
  $ baas help collections`,
  );

/** Where the command asked for is: the first argument that is not an option (nor the value of --data or --database). */
function commandIndex(argv: string[]): number {
  let i = 2;
  while (i < argv.length && argv[i].startsWith("-")) i += argv[i] === "--data" || argv[i] === "--database" ? 2 : 1;
  return i;
}

registerServe(program);
// `serve` needs no other command: their modules (and the services only the CLI uses) are loaded for the others.
if (process.argv[commandIndex(process.argv)] !== "serve") {
  const commands = await Promise.all([
    import("./commands/collections.ts").then((m) => m.registerCollections),
    import("./commands/indexes.ts").then((m) => m.registerIndexes),
    import("./commands/relations.ts").then((m) => m.registerRelations),
    import("./commands/webhooks.ts").then((m) => m.registerWebhooks),
    import("./commands/users.ts").then((m) => m.registerUsers),
    import("./commands/settings.ts").then((m) => m.registerSettings),
    import("./commands/admin.ts").then((m) => m.registerAdmin),
    import("./commands/db.ts").then((m) => m.registerDb),
    import("./commands/types.ts").then((m) => m.registerTypes),
    import("./commands/schema.ts").then((m) => m.registerSchema),
    import("./commands/fields.ts").then((m) => m.registerFields),
    import("./commands/storage.ts").then((m) => m.registerStorage),
  ]);
  for (const register of commands) register(program);
}

function fail(code: number, message: string, body?: Record<string, unknown>): never {
  const json = process.argv.includes("--json");
  process.stderr.write(json && body ? JSON.stringify(body) + "\n" : `error: ${message}\n`);
  process.exit(code);
}

/** `baas help a b` is `baas a b --help`, so help reaches nested commands (with their examples). */
function helpToFlag(argv: string[]): string[] {
  const i = commandIndex(argv);
  if (argv[i] !== "help" || i === argv.length - 1) return argv;
  const path = argv.slice(i + 1).filter((a) => !a.startsWith("-"));
  let cmd: Command = program;
  for (const name of path) {
    const sub = cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));
    if (!sub) fail(2, `unknown command '${[...path.slice(0, path.indexOf(name)), name].join(" ")}'`);
    cmd = sub;
  }
  return [...argv.slice(0, i), ...argv.slice(i + 1), "--help"];
}

try {
  await program.parseAsync(helpToFlag(process.argv));
} catch (err) {
  // Thrown by our own argument parsing inside an action: commander has not reported it.
  if (err instanceof InvalidArgumentError) fail(2, err.message, { error: err.message, code: "usage" });
  if (err instanceof CommanderError) {
    // Help and version print and succeed; help shown because a subcommand is missing is a usage error.
    if (err.code === "commander.helpDisplayed" || err.code === "commander.version") process.exit(0);
    if (err.code === "commander.help") process.exit(err.exitCode === 0 ? 0 : 2);
    process.exit(2);
  }
  if (err instanceof UsageError || err instanceof ConfigError) fail(2, err.message, { error: err.message, code: "usage" });
  if (err instanceof ValidationError) fail(1, err.message, err.body());
  if (err instanceof AppError) fail(1, err.message, err.body());
  fail(1, err instanceof Error ? err.message : String(err), { error: String(err), code: "internal" });
}
