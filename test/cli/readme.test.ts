import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { buildBinary, tempDataDir } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";

// Following the docs top to bottom on a fresh data directory: every `sh` block of README.md runs as
// written, in order, in a fresh directory standing for a fresh clone (with client/ as in the repository),
// with the compiled binary as ./dist/baas; then the `sh` blocks of docs/API.md's quick start, against the
// README's server. A `ts` block whose first line is `// <path>` is written to that path and type-checked
// (tsc --strict) where it stands, before the blocks after it run. The substitutions, also listed in the
// README's "Tests" section:
// - the port 8090 becomes a free port (in the text, and PORT for servers started without --port);
// - `baas ...` and `npx bun cli/index.ts ...` run ./dist/baas; `npx bun <file>` runs Bun;
// - `npm install` and `npm run build` do nothing (the dependencies are there, the binary is built);
//   `npm run build:client` builds client/ as package.json says; `npm pack`, `npm init` and `npm install
//   <file>` (in the app the README makes) are npm's own, offline;
//   `npm test` and `npm run bench` are not run from here (they are the suite and the benchmark);
// - `npm start` is `./dist/baas serve`; a command that starts a server (npm start, baas serve) runs in the
//   background once the server started before it has stopped, and returns when /health answers;
// - docs/API.md's blocks run with the README's ADMIN_SECRET set.

// About 30 s on a quiet machine, a minute and more on a busy one (it builds the binary and the client, runs npm and tsc).
setDefaultTimeout(300_000);

const ROOT = resolve(import.meta.dir, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const API = readFileSync(join(ROOT, "docs/API.md"), "utf8");
const SECRET = "my-very-long-admin-secret";
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

/** The `sh` blocks of a text, and its `ts` blocks that name their file, in order. */
function blocks(text: string): { lang: "sh" | "ts"; code: string }[] {
  return [...text.matchAll(/^```(sh|ts)\n([\s\S]*?)^```$/gm)]
    .map((m) => ({ lang: m[1] as "sh" | "ts", code: m[2]! }))
    .filter((b) => b.lang === "sh" || /^\/\/ \S+\.ts\b/.test(b.code));
}

/** The part of a Markdown text under a `## ` heading, up to the next one. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

// Stands in for dist/baas: `serve` stops the previous server and starts the real binary in the background.
const WRAPPER = `#!/usr/bin/env bash
if [ "\${1:-}" = serve ]; then
  if [ -f "$README_STATE/pid" ]; then
    old=$(cat "$README_STATE/pid")
    kill "$old" 2>/dev/null || true
    for _ in $(seq 1 2400); do kill -0 "$old" 2>/dev/null || break; sleep 0.025; done
  fi
  "$README_BIN" "$@" >>"$README_STATE/server.log" 2>&1 &
  echo $! >"$README_STATE/pid"
  for _ in $(seq 1 2400); do
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
  if [ "\${1:-}" = bun ] && [ -f "\${2:-}" ]; then shift; "$README_BUN" "$@"; return; fi
  echo "the README test does not know 'npx $*'" >&2; return 1
}
npm() {
  case "$*" in
    install | "run build" | test | "run bench") ;;
    start) ./dist/baas serve ;;
    "run build:client") "$README_BUN" build client/src/index.ts --outdir client/dist --target browser && "$README_TSC" -p client ;;
    pack | "init -y" | "install "*.tgz) command npm "$@" --offline --no-audit --no-fund ;;
    *) echo "the README test does not know 'npm $*'" >&2; return 1 ;;
  esac
}
`;

// The README's blocks run SQLite whatever BAAS_TEST_ENGINE says: the PostgreSQL run would repeat this one.
test.skipIf(onPostgres)("the README's blocks, then docs/API.md's quick start, run as written, in order, against a server on a free port", async () => {
  const bin = await buildBinary();
  const port = await freePort();
  mkdirSync(join(clone, "dist"), { recursive: true });
  mkdirSync(state, { recursive: true });
  writeFileSync(join(clone, "dist", "baas"), WRAPPER);
  chmodSync(join(clone, "dist", "baas"), 0o755);
  // client/ as a clone has it (its build writes dist/ there).
  for (const part of ["src", "package.json", "tsconfig.json", "README.md"]) cpSync(join(ROOT, "client", part), join(clone, "client", part), { recursive: true });
  // The build script the README's `npm run build:client` stands for.
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  expect(pkg.scripts["build:client"]).toBe("bun build client/src/index.ts --outdir client/dist --target browser && tsc -p client");

  const steps = [
    ...blocks(README).map((b) => ({ ...b, doc: "README", env: {} })),
    ...blocks(section(API, "Quick start")).map((b) => ({ ...b, doc: "docs/API.md", env: { ADMIN_SECRET: SECRET } })),
  ].map((b) => ({ ...b, code: b.code.replaceAll("8090", String(port)) }));
  expect(steps.filter((b) => b.doc === "README").length).toBeGreaterThanOrEqual(7);
  expect(steps.filter((b) => b.lang === "ts").length).toBeGreaterThanOrEqual(1);
  expect(steps.filter((b) => b.doc === "docs/API.md").length).toBeGreaterThanOrEqual(1);
  const outputs: string[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.lang === "ts") {
      const file = join(clone, /^\/\/ (\S+\.ts)/.exec(step.code)![1]!);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, step.code);
      const tsc = Bun.spawnSync(
        [join(ROOT, "node_modules/.bin/tsc"), "--strict", "--noEmit", "--skipLibCheck", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", "--lib", "es2022,dom", file],
        { cwd: dirname(file) },
      );
      expect(`${step.doc} block ${i + 1} (${file}):\n${tsc.stdout.toString()}${tsc.stderr.toString()}`).toBe(`${step.doc} block ${i + 1} (${file}):\n`);
      continue;
    }
    const proc = Bun.spawn(["bash", "-c", PRELUDE + step.code], {
      cwd: clone,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        PORT: String(port),
        README_BIN: bin,
        README_BUN: process.execPath,
        README_TSC: join(ROOT, "node_modules/.bin/tsc"),
        README_STATE: state,
        README_CLONE: clone,
        ...step.env,
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const where = `${step.doc} block ${i + 1}:\n${step.code}\nstdout:\n${stdout}\nstderr:\n${stderr}`;
    expect(code, where).toBe(0);
    // curl -s exits 0 on a 4xx: an API error body in the output is a failed step too.
    expect(stdout, where).not.toMatch(/"error":/);
    outputs.push(stdout);
  }
  const all = outputs.join("\n");
  // The walk-through's realtime step printed the stream: its connect, then the post written meanwhile.
  expect(all).toMatch(/event: connect\ndata: \{"client_id":"[^"]+"\}[\s\S]*event: create\n(id: \S+\n)?data: \{"collection":"posts","action":"create","record":\{[^\n]*"title":"Live"/);
  // The client's app logged in and read both collections.
  expect(all).toContain("2 posts, 0 comments");
  // The quick start's bracket filter found its note.
  expect(all).toMatch(/"items":\[\{[^\n]*"text":"first","cat":"todo"\}\],"next_cursor":null,"total":1/);
  // The walk-through, the CLI block and the quick start did what they say.
  const list = await fetch(`http://localhost:${port}/api/v1/posts?limit=10`);
  expect(((await list.json()) as { total: number }).total).toBe(2);
  const cols = await fetch(`http://localhost:${port}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${SECRET}` } });
  expect(((await cols.json()) as { items: { name: string }[] }).items.map((c) => c.name).sort()).toEqual(["articles", "comments", "notes", "posts"]);
});
