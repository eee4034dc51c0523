import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
let built: Promise<string> | null = null;
let buildDir: string | null = null;

/** Compiles `cli/index.ts` into a temporary executable once per test process, as `npm run build` does. */
export function buildBinary(): Promise<string> {
  built ??= (async () => {
    buildDir = mkdtempSync(join(tmpdir(), "baas-bin-"));
    const out = join(buildDir, "baas");
    const proc = Bun.spawn([process.execPath, "build", "--compile", join(ROOT, "cli/index.ts"), "--outfile", out], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await proc.exited;
    if (code !== 0) throw new Error(`bun build --compile failed: ${await new Response(proc.stderr).text()}`);
    process.once("exit", () => buildDir && rmSync(buildDir, { recursive: true, force: true }));
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

/** Runs the compiled binary with `args` (no terminal: stdin is a pipe or closed). */
export async function runCli(
  bin: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<CliResult> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...opts.env };
  const proc = Bun.spawn([bin, ...args], {
    cwd: opts.cwd ?? tmpdir(),
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
