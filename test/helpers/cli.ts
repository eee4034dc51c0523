import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { closeContext, openContext } from "../../src/app-context.ts";
import { type AppContext } from "../../src/context.ts";
import { databaseUrlForDir, onPostgres } from "./engine.ts";
import { waitFor } from "./wait.ts";
import { removeWhenGone } from "./when-gone.ts";

const ROOT = resolve(import.meta.dir, "../..");
let built: Promise<string> | null = null;

/** The options and entry points of package.json's `build` script (its `bun build` command, but the output path). */
function buildCommand(): { flags: string[]; entries: string[] } {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { build: string } };
  const command = pkg.scripts.build.split("&&")[0]!.trim().split(/\s+/);
  const words = command.slice(2).filter((w, i, all) => w !== "--outfile" && all[i - 1] !== "--outfile");
  const flags = words.filter((w) => w.startsWith("--"));
  if (!flags.includes("--compile")) throw new Error("package.json's build script no longer compiles with bun build --compile");
  return { flags, entries: words.filter((w) => !w.startsWith("--")) };
}

/** Compiles `cli/index.ts` (and the other entry points of the build) into a temporary executable once per test process, as `npm run build` does. */
export function buildBinary(): Promise<string> {
  built ??= (async () => {
    const buildDir = mkdtempSync(join(tmpdir(), "baas-bin-"));
    removeWhenGone(buildDir);
    const out = join(buildDir, "baas");
    // The flags of `npm run build`, read from package.json: the tests run what ships.
    const { flags, entries } = buildCommand();
    const proc = Bun.spawn([process.execPath, "build", ...flags, ...entries, "--outfile", out], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await proc.exited;
    if (code !== 0) throw new Error(`bun build --compile failed: ${await new Response(proc.stderr).text()}`);
    return out;
  })();
  return built;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON. */
  json(): any;
}

/**
 * On PostgreSQL (BAAS_TEST_ENGINE=postgres), the DATABASE_URL of the data directory a run names (`--data`,
 * else DATA_DIR, else ./baas_data), so `serve` and the commands of one data directory share one database;
 * nothing when the run names a database itself.
 */
export async function databaseEnv(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<Record<string, string>> {
  if (!onPostgres || "DATABASE_URL" in env || args.includes("--database")) return {};
  const at = args.lastIndexOf("--data");
  const dir = at >= 0 && at + 1 < args.length ? args[at + 1] : (env.DATA_DIR ?? "baas_data");
  return { DATABASE_URL: await databaseUrlForDir(resolve(cwd, dir)) };
}

/** Runs the compiled binary with `args` (no terminal: stdin is a pipe or closed). */
export async function runCli(
  bin: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<CliResult> {
  const cwd = opts.cwd ?? tmpdir();
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...(await databaseEnv(args, cwd, opts.env)), ...opts.env };
  const proc = Bun.spawn([bin, ...args], {
    cwd,
    env,
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return {
    code,
    stdout,
    stderr,
    json() {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`stdout is not JSON (exit ${code}): ${stdout}\nstderr: ${stderr}`);
      }
    },
  };
}

/** A fresh temporary data directory. */
export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), "baas-cli-"));
}

/**
 * A context on the database of a data directory (its SQLite file; on PostgreSQL the directory's database),
 * for tests that set up or check stored rows directly. Close it with closeContext.
 */
export async function openDataDir(dir: string): Promise<AppContext> {
  const database = onPostgres ? await databaseUrlForDir(dir) : undefined;
  return openContext(loadConfig({ data: dir, database }, {}));
}

/** Runs `fn` on a context of the data directory's database, closed after. */
export async function withDataDir<T>(dir: string, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await openDataDir(dir);
  try {
    return await fn(ctx);
  } finally {
    await closeContext(ctx);
  }
}

/** A program's output without line ends and terminal escapes, as a person reads the screen. */
export const screenText = (s: string) => s.replace(/[\r\n]/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");

/**
 * Runs `bin --data dir …args` on a pseudo-terminal (`script`) and types each input once the screen shows its
 * prompt text and the program has put the terminal in raw mode to read keys (as a person would), so a slow
 * start never makes the keys arrive before the question, nor echoed by the terminal. Keys go one at a time.
 */
export async function runOnTty(
  script: string,
  bin: string,
  dir: string,
  args: string[],
  steps: [waitFor: string, input: string][],
): Promise<{ code: number; out: string }> {
  // The shell records which terminal it got, so the test can read that terminal's mode.
  const ttyFile = join(dir, "tty-name");
  const command = `stty cols 200 rows 50; tty > '${ttyFile}'; exec ${[bin, "--data", dir, ...args].map((a) => `'${a}'`).join(" ")}`;
  const proc = Bun.spawn([script, "-q", "-e", "-c", command, "/dev/null"], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", TERM: "xterm", ...(await databaseEnv(["--data", dir], dir)) },
  });
  let out = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out += decoder.decode(value);
    }
  })();
  /** The terminal is in raw mode (no line editing, no echo): the prompt library reads single keys now. */
  const rawMode = () => {
    const tty = existsSync(ttyFile) ? readFileSync(ttyFile, "utf8").trim() : "";
    if (!tty.startsWith("/dev/")) return false;
    const mode = Bun.spawnSync(["stty", "-F", tty, "-a"]).stdout.toString();
    return / -icanon\b/.test(mode) && / -echo\b/.test(mode);
  };
  steps: for (const [prompt, input] of steps) {
    await waitFor(() => screenText(out).includes(prompt) && rawMode(), { what: `the prompt "${prompt}" in raw mode` });
    for (const key of input) {
      try {
        proc.stdin.write(key);
        proc.stdin.flush();
      } catch (err) {
        // The command stopped reading (a y/n key answers a confirm at once, and it may exit before the
        // next key): the keys left cannot change anything; its exit code and output are checked by the caller.
        if ((err as { code?: string }).code === "EPIPE") break steps;
        throw err;
      }
      // Keystroke pacing: one key at a time, as typed.
      await Bun.sleep(10);
    }
  }
  const code = await proc.exited;
  proc.stdin.end();
  await reading;
  return { code, out: screenText(out) };
}
