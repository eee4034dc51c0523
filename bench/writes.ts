// `bun bench/writes.ts [--no-build] [--rounds N]`: the writes benchmark. Builds dist/baas, then
// compares baas with bench/writes-ceiling.ts (a bare Bun.serve + bun:sqlite insert) on
//   - bulk insert of 100,000 records through HTTP in requests of 500 (POST /:collection/bulk),
//   - single creates (POST /:collection) at concurrency 32,
// driving both with bench/load.ts from a separate process, alternating baas and ceiling for N
// rounds (default 3) and keeping each side's best round. Prints a table and writes it into the
// "Writes" section of bench/RESULTS.md.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, load, startProc, type Result } from "./harness.ts";

const args = process.argv.slice(2);
const ROUNDS = Number(args[args.indexOf("--rounds") + 1]) || 3;
const RECORDS = 100_000;
const CHUNK = 500;
const CREATE_SECONDS = 5;

let seed = 7;
const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296);
const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split(" ");
const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ");
const record = () => ({ title: words(3), category: `c${Math.floor(rnd() * 20)}`, score: Math.round(rnd() * 10000) / 100, body: words(12) });

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Runs one workload and adds the server's CPU time per request (robust on a busy machine). */
async function measure(pid: number, ...a: Parameters<typeof load>): Promise<Measured> {
  const c0 = cpuSeconds(pid);
  const r = await load(...a);
  return { ...r, cpu: cpuSeconds(pid) - c0 };
}

type Measured = Result & { cpu: number };

/** A fresh server of each kind, with the collection made public and its field types fixed. */
async function fresh(kind: "baas" | "ceiling") {
  const dir = mkdtempSync(join(tmpdir(), `baas-writes-${kind}-`));
  const srv =
    kind === "baas"
      ? await startProc([BIN, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir], dir, { ADMIN_SECRET: SECRET })
      : await startProc([process.execPath, join(ROOT, "bench/writes-ceiling.ts"), join(dir, "ceiling.db")], dir);
  if (kind === "baas") {
    const h = { "content-type": "application/json", authorization: `Bearer ${SECRET}` };
    const rules = { read: "public", create: "public", update: "public", delete: "public" };
    const c = await fetch(`${srv.url}/api/v1/admin/collections`, { method: "POST", headers: h, body: JSON.stringify({ name: "items", rules }) });
    if (c.status !== 201) throw new Error(`create collection: ${c.status} ${await c.text()}`);
  }
  await fetch(`${srv.url}/api/v1/items`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(record()) });
  return {
    url: srv.url,
    pid: srv.proc.pid,
    async stop() {
      srv.proc.kill();
      await srv.proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (!args.includes("--no-build")) {
  const b = Bun.spawnSync(["npm", "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
  if (b.exitCode !== 0) throw new Error("build failed");
}

const bulkBodies = Array.from({ length: RECORDS / CHUNK }, () => ({
  method: "POST",
  path: "/api/v1/items/bulk",
  body: JSON.stringify(Array.from({ length: CHUNK }, record)),
}));
const creates = Array.from({ length: 2000 }, () => ({ method: "POST", path: "/api/v1/items", body: JSON.stringify(record()) }));

type Row = { name: string; unit: string; scale: number; baas: Measured[]; ceiling: Measured[] };
const rows: Row[] = [
  { name: `bulk insert ${RECORDS.toLocaleString("en-US")} records, ${CHUNK} per request, concurrency 4`, unit: "records/s", scale: CHUNK, baas: [], ceiling: [] },
  { name: `single create, concurrency 32, ${CREATE_SECONDS} s`, unit: "creates/s", scale: 1, baas: [], ceiling: [] },
];

for (let round = 0; round < ROUNDS; round++) {
  for (const kind of ["baas", "ceiling"] as const) {
    const s = await fresh(kind);
    const bulk = await measure(s.pid, s.url, bulkBodies, { concurrency: 4, total: bulkBodies.length });
    const single = await measure(s.pid, s.url, creates, { concurrency: 32, durationMs: CREATE_SECONDS * 1000, warmupMs: 500 });
    await s.stop();
    rows[0][kind].push(bulk);
    rows[1][kind].push(single);
    process.stderr.write(
      `round ${round + 1} ${kind}: bulk ${(bulk.rps * CHUNK).toFixed(0)} records/s, ${((bulk.requests * CHUNK) / bulk.cpu).toFixed(0)} per CPU-s (${bulk.errors} errors ${bulk.firstError}), ` +
        `create ${single.rps.toFixed(0)}/s, ${(single.requests / single.cpu).toFixed(0)} per CPU-s, p99 ${single.p99.toFixed(1)} ms (${single.errors} errors ${single.firstError})\n`,
    );
  }
}

const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const best = (xs: Measured[]) => xs.reduce((a, b) => (b.rps > a.rps ? b : a));
/** Requests per server CPU-second over all rounds: the work each request costs, whatever else runs. */
const perCpu = (xs: Measured[]) => xs.reduce((n, x) => n + x.requests, 0) / xs.reduce((n, x) => n + x.cpu, 0);
const lines = [
  "## Writes: bulk insert and single create (bench/writes.ts)",
  "",
  `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), Bun ${Bun.version}. Best of ${ROUNDS} alternating rounds per side, each on a fresh data dir.`,
  "Rates are the best round of each side; \"per CPU-s\" divides all rounds' requests by the server process's CPU time (user + system), which holds up when other work shares the machine.",
  "Ceiling: bench/writes-ceiling.ts, bare Bun.serve + bun:sqlite inserting the same rows into the same table (system columns, field columns, owner index; WAL, synchronous=NORMAL) and answering the same JSON, without rules, catalog, validation or hooks. No full-text or secondary index on either side.",
  "",
  "| Workload | baas | p50 ms | p99 ms | ceiling | ceiling p99 ms | baas / ceiling | baas per CPU-s | ceiling per CPU-s | baas / ceiling per CPU-s | errors |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) => {
    const b = best(r.baas);
    const c = best(r.ceiling);
    const errs = r.baas.reduce((n, x) => n + x.errors, 0);
    const bc = perCpu(r.baas) * r.scale;
    const cc = perCpu(r.ceiling) * r.scale;
    return `| ${r.name} | ${fmt(b.rps * r.scale)} ${r.unit} | ${fmt(b.p50, 1)} | ${fmt(b.p99, 1)} | ${fmt(c.rps * r.scale)} ${r.unit} | ${fmt(c.p99, 1)} | ${fmt((b.rps / c.rps) * 100)}% | ${fmt(bc)} | ${fmt(cc)} | ${fmt((bc / cc) * 100)}% | ${errs} |`;
  }),
  "",
];
const section = lines.join("\n");
process.stdout.write(section + "\n");

// Replace only this section of RESULTS.md (between its markers), keeping everything else.
const file = join(ROOT, "bench/RESULTS.md");
const BEGIN = "<!-- writes:begin -->";
const END = "<!-- writes:end -->";
let text = "";
try {
  text = readFileSync(file, "utf8");
} catch {}
const block = `${BEGIN}\n${section}${END}\n`;
// bench/run.ts regenerates the part above "<!-- analysis -->" and keeps the rest: live below it.
const ANALYSIS = "<!-- analysis -->";
if (text.includes(BEGIN) && text.includes(END))
  text = text.slice(0, text.indexOf(BEGIN)) + block + text.slice(text.indexOf(END) + END.length + 1);
else text = `${text}${text && !text.endsWith("\n") ? "\n" : ""}${text.includes(ANALYSIS) ? "" : `${ANALYSIS}\n`}\n${block}`;
writeFileSync(file, text);
