// Shared pieces of the benchmark scripts: starting a server process and driving it with the
// separate load generator (bench/load.ts).
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** The repository root, the compiled binary and the admin secret the benchmarks start it with. */
export const ROOT = resolve(import.meta.dir, "..");
export const BIN = join(ROOT, "dist/baas");
export const SECRET = "bench-admin-secret-0123456789";

export interface Proc {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  dir: string;
}

/** Spawns a server and waits for its "listening on http://host:port" line on stderr. */
export async function startProc(cmd: string[], dir: string, env: Record<string, string> = {}): Promise<Proc> {
  const proc = Bun.spawn(cmd, { cwd: dir, env: { ...process.env, ...env }, stdout: "ignore", stderr: "pipe" });
  const reader = proc.stderr.getReader();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`failed to start: ${text}`);
    text += new TextDecoder().decode(value);
    const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(text) ?? /listening on http:\/\/[^:]+:(\d+)/.exec(text);
    if (m) {
      (async () => {
        while (!(await reader.read()).done);
      })();
      const url = m[1].startsWith("http") ? m[1] : `http://127.0.0.1:${m[1]}`;
      return { proc, url, dir };
    }
  }
}

export interface Result {
  requests: number;
  errors: number;
  firstError: string;
  rps: number;
  p50: number;
  p99: number;
}

/** Runs bench/load.ts in its own process against `base` and returns its figures. */
export async function load(
  base: string,
  requests: object[],
  o: { concurrency: number; durationMs?: number; total?: number; warmupMs?: number },
  /** Wraps the loader's command (e.g. `taskset -c 0 …` to keep it off the server's CPU). */
  wrap: (cmd: string[]) => string[] = (cmd) => cmd,
): Promise<Result> {
  const file = join(tmpdir(), `baas-load-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ base, requests, ...o }));
  const p = Bun.spawn(wrap([process.execPath, join(ROOT, "bench/load.ts"), file]), { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  rmSync(file, { force: true });
  return JSON.parse(out.trim().split("\n").pop()!) as Result;
}

/** `--name value` pairs of a benchmark's command line; `--postgres` alone asks for a throwaway PostgreSQL cluster,
 * made as the tests make theirs, whose address then goes in `database`. */
export async function benchOptions(args = process.argv.slice(2)): Promise<Record<string, string>> {
  const opt: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const k = args[i]!.replace(/^--/, "");
    if (k === "postgres") opt.postgres = "1";
    else opt[k] = args[++i]!;
  }
  if (opt.postgres) opt.database = await (await import("../test/helpers/postgres.ts")).createTestDatabase({ migrated: true });
  return opt;
}

/** Starts `baas serve` from source on `dir` (on `database` when given) with the benchmarks' admin secret. */
export function startSource(dir: string, database?: string, env: Record<string, string> = {}): Promise<Proc> {
  const cmd = [process.execPath, join(ROOT, "cli/index.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir];
  return startProc(database ? [...cmd, "--database", database] : cmd, dir, { ADMIN_SECRET: SECRET, ...env });
}

/** A JSON call to `url`'s API as `token` (the admin secret unless given); throws on a 4xx or 5xx. */
export function apiCaller(url: string) {
  return async (method: string, path: string, body?: unknown, token = SECRET): Promise<any> => {
    const res = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  };
}
