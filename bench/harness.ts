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
