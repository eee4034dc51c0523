// `npm test`: the whole suite in a random order that can be replayed and, alongside it, the HTTP and CLI suites
// again on PostgreSQL (BAAS_TEST_ENGINE=postgres), with the PostgreSQL-only engine tests, when its server binaries are present. The seed is TEST_SEED when set,
// else a random one; it is printed first (and again at the end) so a failing order can be run again.
// Tests that spend their time waiting on the clock (files named `*.waits.ts`, which a plain `bun test` does not
// pick up) run in processes of their own beside those, on each engine, so their waits do not lengthen the suites.
// Bun's own output passes through; the last lines add up all runs (" N pass" / " N fail"), and the exit code
// is non-zero when any run failed. Arguments (test files or filters) run on SQLite only, without the waits.
import { postgresAvailable, postgresSkipReason } from "../test/helpers/postgres.ts";

const given = process.env.TEST_SEED?.trim();
if (given && !/^\d+$/.test(given)) {
  console.error(`TEST_SEED must be a whole number, got "${given}"`);
  process.exit(2);
}
const seed = given || String(Math.floor(Math.random() * 2 ** 32));
const replay = `test seed: ${seed} (replay: TEST_SEED=${seed} npm test)`;
console.log(replay);

interface Output {
  write(chunk: Uint8Array): unknown;
}

/** Keeps a run's output to print later, so two runs at once do not mix their lines. */
class Held implements Output {
  chunks: Uint8Array[] = [];
  write(chunk: Uint8Array) {
    this.chunks.push(chunk);
  }
  flushTo(out: Output) {
    for (const c of this.chunks) out.write(c);
  }
}

/** Runs `bun test` with these arguments, echoing its output, and returns its exit code and counts. */
async function run(
  args: string[],
  env: Record<string, string> = {},
  out: { stdout: Output; stderr: Output } = { stdout: process.stdout, stderr: process.stderr },
): Promise<{ code: number; pass: number; fail: number; failures: string[] }> {
  const proc = Bun.spawn([process.execPath, "test", "--timeout", "60000", "--randomize", `--seed=${seed}`, ...args], {
    stdio: ["inherit", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const counts = { pass: 0, fail: 0 };
  // Each failed test with the lines before it (its error), repeated at the end where a log's tail shows them.
  const failures: string[] = [];
  const echo = async (stream: ReadableStream<Uint8Array>, out: Output) => {
    const decoder = new TextDecoder();
    let pending = "";
    const recent: string[] = [];
    let file = "";
    const reader = stream.getReader();
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) break;
      out.write(chunk);
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        const m = /^\s*(\d+) (pass|fail)$/.exec(line);
        if (m) counts[m[2] as "pass" | "fail"] = Number(m[1]);
        if (/^\S+\.test\.ts:$/.test(line)) file = line;
        if (line.startsWith("(fail)") && !failures.some((f) => f.endsWith(line))) failures.push([file, ...recent, line].join("\n"));
        recent.push(line);
        if (recent.length > 12) recent.shift();
        if (line.startsWith("(pass)") || line.startsWith("(fail)") || line.startsWith("(skip)")) recent.length = 0;
      }
    }
  };
  await Promise.all([echo(proc.stdout, out.stdout), echo(proc.stderr, out.stderr)]);
  return { code: await proc.exited, ...counts, failures };
}

// Lines of our own go through the same stream as the runs' echoed output (console.log does not: piped, the
// two could come out of order), and the last one is awaited so nothing is lost at exit.
const say = (text: string) => new Promise<void>((resolve) => process.stdout.write(`${text}\n`, () => resolve()));

// Tests of the PostgreSQL engine itself that need a PostgreSQL test app (they skip in the SQLite run).
const POSTGRES_ONLY = ["test/db/pg-group-commit"];

// Tests that wait on the clock, run beside the suites (named one by one: `bun test` does not find them by itself).
const WAITS = [...new Bun.Glob("test/**/*.waits.ts").scanSync(".")].sort().map((f) => `./${f}`);

/** A run whose output is held, to be printed after the first run's under `title`. */
function heldRun(title: string, engine: string, args: string[], env: Record<string, string> = {}) {
  const held = new Held();
  return { title, engine, held, result: run(args, env, { stdout: held, stderr: held }) };
}

const own = process.argv.slice(2);
const results: { code: number; pass: number; fail: number; failures: string[]; engine: string }[] = [];
if (own.length === 0) {
  // The runs at once (most tests wait on I/O, so they share the cores well); the first run's output passes
  // through, the others' is held and printed after it.
  const pg = { BAAS_TEST_ENGINE: "postgres" };
  const others = [
    ...(postgresAvailable ? [heldRun("The HTTP and CLI suites on PostgreSQL (BAAS_TEST_ENGINE=postgres), run alongside:", "PostgreSQL", ["test/http", "test/cli", ...POSTGRES_ONLY], pg)] : []),
    heldRun("The tests that wait on the clock (*.waits.ts), run alongside on SQLite:", "SQLite (waits)", WAITS),
    ...(postgresAvailable ? [heldRun("The tests that wait on the clock on PostgreSQL, run alongside:", "PostgreSQL (waits)", WAITS, pg)] : []),
  ];
  const first = await run([]);
  results.push({ ...first, engine: "SQLite" });
  for (const o of others) {
    const r = await o.result;
    await say(`\n${o.title}`);
    o.held.flushTo(process.stdout);
    results.push({ ...r, engine: o.engine });
  }
  if (!postgresAvailable) await say(`\nThe HTTP and CLI suites were not run on PostgreSQL: ${postgresSkipReason}`);
} else {
  results.push({ ...(await run(own)), engine: "SQLite" });
}
for (const r of results)
  if (r.failures.length) await say(`\nFailed on ${r.engine} (${r.failures.length}):\n${r.failures.join("\n\n")}`);
if (results.length > 1) {
  await say("\nAll runs:");
  await say(` ${results.reduce((n, r) => n + r.pass, 0)} pass`);
  await say(` ${results.reduce((n, r) => n + r.fail, 0)} fail`);
}
await say(replay);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
