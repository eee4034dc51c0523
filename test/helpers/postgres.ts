import { SQL } from "bun";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migratePostgres } from "../../src/db/migrate-postgres.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { whenGone } from "./when-gone.ts";

// Throwaway PostgreSQL clusters for tests: initdb in a temp directory, pg_ctl on a free port with its
// unix socket in that directory, no system service, no password. PostgreSQL refuses to run as root,
// so as root every server command runs as the `postgres` system user (Debian's package creates it).

/** The directory holding initdb and pg_ctl (PostgreSQL 15 or later), or null when none is installed. */
function findBinDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => /^\d+$/.test(v) && Number(v) >= 15)
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) {
      const dir = join(base, v, "bin");
      if (existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
    }
  }
  const initdb = Bun.which("initdb");
  const pgCtl = Bun.which("pg_ctl");
  if (initdb && pgCtl) return join(initdb, "..");
  return null;
}

const isRoot = process.getuid?.() === 0;
const binDir = findBinDir();
const systemUser = isRoot && Bun.spawnSync(["id", "-u", "postgres"]).success ? "postgres" : null;

/** Why PostgreSQL tests cannot run here, or null when they can. */
export const postgresSkipReason: string | null = !binDir
  ? "PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql package to run the PostgreSQL tests"
  : isRoot && !systemUser
    ? "running as root without a `postgres` system user to run the PostgreSQL server as"
    : isRoot && !Bun.which("runuser")
      ? "running as root without runuser to start the PostgreSQL server as the postgres user"
      : null;

/** True when a throwaway cluster can be started. */
export const postgresAvailable = postgresSkipReason === null;

let warned = false;
/** Prints the skip reason once per process (so a skipped run says why). */
export function warnIfSkipped(): void {
  if (postgresSkipReason && !warned) {
    warned = true;
    console.warn(`skipping PostgreSQL tests: ${postgresSkipReason}`);
  }
}

/** Runs a server program, as the postgres user when this process is root. */
function runServerCommand(args: string[]): void {
  const cmd = isRoot ? ["runuser", "-u", systemUser!, "--", ...args] : args;
  const res = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (!res.success) {
    throw new Error(`${args[0]} failed (exit ${res.exitCode}): ${res.stderr.toString()}${res.stdout.toString()}`);
  }
}

/** A free TCP port on the loopback interface. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface PgCluster {
  readonly port: number;
  /** Base directory (data directory, socket and log inside). */
  readonly dir: string;
  /** URL of a database of this cluster (the superuser, no password). */
  url(database: string): string;
  /** A new database, copied from a template (`template0`, empty, unless named); returns its URL. */
  createDatabase(template?: string): Promise<string>;
  /** Stops the server (fast shutdown: open connections are closed). */
  stop(): void;
  /** Starts the server again on the same port. */
  start(): void;
  /** Stops the server and removes its directory. */
  destroy(): void;
}

let counter = 0;

/** Starts a new cluster of its own (for tests that stop and start the server). Call `destroy()` at the end. */
export async function startCluster(): Promise<PgCluster> {
  if (!postgresAvailable) throw new Error(postgresSkipReason!);
  const dir = mkdtempSync(join(tmpdir(), "baas-pg-"));
  if (isRoot) {
    const uid = Number(Bun.spawnSync(["id", "-u", systemUser!]).stdout.toString().trim());
    const gid = Number(Bun.spawnSync(["id", "-g", systemUser!]).stdout.toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  let port = await freePort();
  runServerCommand([join(binDir!, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]);
  // Durability is of no use to a throwaway test cluster: fsync off keeps it fast.
  const opts = () => [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
  ].join(" ");
  let running = false;
  const cluster: PgCluster = {
    get port() {
      return port;
    },
    dir,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async createDatabase(template = "template0") {
      const name = `t_${process.pid}_${++counter}`;
      const admin = new SQL({ url: cluster.url("postgres"), max: 1 });
      try {
        await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
      } finally {
        await admin.close();
      }
      return cluster.url(name);
    },
    start() {
      runServerCommand([join(binDir!, "pg_ctl"), "-D", data, "-o", opts(), "-l", join(dir, "server.log"), "-w", "-t", "60", "start"]);
      running = true;
    },
    stop() {
      if (!running) return;
      runServerCommand([join(binDir!, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]);
      running = false;
    },
    destroy() {
      try {
        if (running) runServerCommand([join(binDir!, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {}
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Another process may take the free port before the server binds it: then try another one.
  for (let attempt = 1; ; attempt++) {
    try {
      cluster.start();
      break;
    } catch (err) {
      if (attempt === 3) throw err;
      port = await freePort();
    }
  }
  watch(dir, data);
  return cluster;
}

/** Stops the server and removes its directory once this process is gone, however it ended (see whenGone). */
function watch(dir: string, data: string): void {
  const stop = [join(binDir!, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"].map((a) => `'${a}'`).join(" ");
  const asUser = isRoot ? `runuser -u ${systemUser} -- ${stop}` : stop;
  whenGone(`if [ -d '${data}' ]; then ${asUser}; rm -rf '${dir}'; fi`);
}

let shared: Promise<PgCluster> | null = null;
let template: Promise<string> | null = null;

/** The cluster shared by every test of this process, started on first use, removed once the process is gone. */
export function sharedCluster(): Promise<PgCluster> {
  shared ??= startCluster();
  return shared;
}

/**
 * A fresh database on the shared cluster; returns its URL. Empty, or with `migrated` the system tables
 * already made: a copy of a template migrated once per process.
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<string> {
  const cluster = await sharedCluster();
  if (!opts.migrated) return cluster.createDatabase();
  template ??= (async () => {
    const url = await cluster.createDatabase("template0");
    const engine = openPostgres({ url, poolSize: 1 });
    try {
      await migratePostgres(engine);
    } finally {
      await engine.close();
    }
    return new URL(url).pathname.slice(1);
  })();
  return cluster.createDatabase(await template);
}
