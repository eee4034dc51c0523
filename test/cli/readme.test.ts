import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { buildBinary, tempDataDir } from "../helpers/cli.ts";

// Every `sh` block of README.md runs as written, in order, in a fresh directory standing for a fresh clone,
// with the compiled binary as ./dist/baas. The substitutions, also listed in the README's "Tests" section:
// - the port 8090 becomes a free port (in the text, and PORT for servers started without --port);
// - `baas ...` and `npx bun cli/index.ts ...` run ./dist/baas;
// - `npm install` and `npm run build` do nothing (the dependencies are there, the binary is built);
//   `npm test` and `npm run bench` are not run from here (they are the suite and the benchmark);
// - `npm start` is `./dist/baas serve`; a command that starts a server (npm start, baas serve) runs in the
//   background once the server started before it has stopped, and returns when /health answers.

setDefaultTimeout(120_000);

const README = readFileSync(resolve(import.meta.dir, "../../README.md"), "utf8");
const clone = tempDataDir();
const state = join(clone, ".readme-test");

afterAll(async () => {
  const pidFile = join(state, "pid");
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, "utf8"));
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  rmSync(clone, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => ok(port));
    });
  });
}

/** The shell blocks of the README, in order. */
function shellBlocks(text: string): string[] {
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

// Stands in for dist/baas: `serve` stops the previous server and starts the real binary in the background.
const WRAPPER = `#!/usr/bin/env bash
if [ "\${1:-}" = serve ]; then
  if [ -f "$README_STATE/pid" ]; then
    old=$(cat "$README_STATE/pid")
    kill "$old" 2>/dev/null || true
    for _ in $(seq 1 400); do kill -0 "$old" 2>/dev/null || break; sleep 0.025; done
  fi
  "$README_BIN" "$@" >>"$README_STATE/server.log" 2>&1 &
  echo $! >"$README_STATE/pid"
  for _ in $(seq 1 400); do
    curl -fs "http://localhost:$PORT/health" >/dev/null 2>&1 && exit 0
    kill -0 $! 2>/dev/null || break
    sleep 0.025
  done
  echo "the server did not start:" >&2; cat "$README_STATE/server.log" >&2; exit 1
fi
exec "$README_BIN" "$@"
`;

const PRELUDE = `set -euo pipefail
baas() { "$README_CLONE/dist/baas" "$@"; }
npx() {
  if [ "\${1:-} \${2:-}" = "bun cli/index.ts" ]; then shift 2; "$README_CLONE/dist/baas" "$@"; return; fi
  echo "the README test does not know 'npx $*'" >&2; return 1
}
npm() {
  case "$*" in
    install | "run build" | test | "run bench") ;;
    start) ./dist/baas serve ;;
    *) echo "the README test does not know 'npm $*'" >&2; return 1 ;;
  esac
}
`;

test("every shell block of README.md runs as written, in order, against a server on a free port", async () => {
  const bin = await buildBinary();
  const port = await freePort();
  mkdirSync(join(clone, "dist"), { recursive: true });
  mkdirSync(state, { recursive: true });
  writeFileSync(join(clone, "dist", "baas"), WRAPPER);
  chmodSync(join(clone, "dist", "baas"), 0o755);

  const blocks = shellBlocks(README).map((b) => b.replaceAll("8090", String(port)));
  expect(blocks.length).toBeGreaterThanOrEqual(5);
  for (const [i, block] of blocks.entries()) {
    const proc = Bun.spawn(["bash", "-c", PRELUDE + block], {
      cwd: clone,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        PORT: String(port),
        README_BIN: bin,
        README_STATE: state,
        README_CLONE: clone,
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const where = `README block ${i + 1}:\n${block}\nstdout:\n${stdout}\nstderr:\n${stderr}`;
    expect(code, where).toBe(0);
    // curl -s exits 0 on a 4xx: an API error body in the output is a failed step too.
    expect(stdout, where).not.toMatch(/"error":/);
  }
  // The walk-through and the CLI block did what they say.
  const list = await fetch(`http://localhost:${port}/api/v1/posts?limit=10`);
  expect(((await list.json()) as { total: number }).total).toBe(1);
  const secret = "my-very-long-admin-secret";
  const cols = await fetch(`http://localhost:${port}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}` } });
  expect(((await cols.json()) as { items: { name: string }[] }).items.map((c) => c.name).sort()).toEqual(["articles", "posts"]);
});
