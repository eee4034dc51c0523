import type { Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ADMIN_SECRET } from "./app.ts";
import { databaseEnv } from "./cli.ts";

const ROOT = resolve(import.meta.dir, "../..");

export interface ServerProcess {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  port: number;
  dir: string;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** SIGKILL, no clean-up of the data dir. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number>;
  /** Stops (if running) and removes the data dir unless it was given. */
  cleanup(): Promise<void>;
}

/**
 * Starts `baas serve` from source as a real process on a free port (port 0) and waits for /health.
 * `cmd` may point at a compiled binary instead; `args` are more options of `serve`.
 */
export async function spawnServer(
  opts: { dir?: string; env?: Record<string, string>; cmd?: string[]; args?: string[] } = {},
): Promise<ServerProcess> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "baas-srv-"));
  const cmd = opts.cmd ?? [process.execPath, join(ROOT, "cli/index.ts")];
  const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--data", dir, ...(opts.args ?? [])];
  const proc = Bun.spawn([...cmd, ...args], {
    cwd: dir,
    env: { ...process.env, ADMIN_SECRET, ...(await databaseEnv(args, dir, opts.env)), ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let err = "";
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  const port = await new Promise<number>((resolveP, reject) => {
    // A start takes a fraction of a second on a quiet machine; the budget is for a busy one (a server that
    // exits early is reported at once, below).
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 60_000);
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        err += decoder.decode(value);
        const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          resolveP(Number(m[1]));
        }
      }
      clearTimeout(timer);
      reject(new Error(`server exited: ${err}`));
    })().catch(() => {});
  });
  // Keep draining stderr so the child never blocks on a full pipe.
  (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) break;
      err += decoder.decode(value);
    }
  })();
  const url = `http://127.0.0.1:${port}`;
  let exited = false;
  proc.exited.then(() => (exited = true));
  const self: ServerProcess = {
    proc,
    url,
    port,
    dir,
    stderr: () => err,
    async kill9() {
      proc.kill(9);
      await proc.exited;
    },
    async stop() {
      if (!exited) proc.kill("SIGTERM");
      return await proc.exited;
    },
    async cleanup() {
      if (!exited) {
        proc.kill(9);
        await proc.exited;
      }
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}
