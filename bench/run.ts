// `npm run bench`: builds dist/baas, starts it and a bare Bun + bun:sqlite "ceiling" program,
// drives both with the same workloads from a separate load-generator process on 127.0.0.1,
// and writes bench/RESULTS.md. Options: --no-build, --seconds N (per workload, default 5).
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, load, startProc, type Result } from "./harness.ts";

const args = process.argv.slice(2);
const SECONDS = Number(args[args.indexOf("--seconds") + 1]) || 5;
const RECORDS = 100_000;
const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu running jumped quickly database server record search index query filter".split(" ");

function rand(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 4294967296;
  };
}
const r = rand(42);
const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" ");
const record = () => ({ title: words(3), category: `c${Math.floor(r() * 20)}`, score: Math.round(r() * 10000) / 100, body: `${words(12)} tag${Math.floor(r() * 1000)}` });

const startBaas = (dir: string) =>
  startProc([BIN, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir], dir, { ADMIN_SECRET: SECRET });
const startCeiling = (dir: string) => startProc([process.execPath, join(ROOT, "bench/ceiling.ts"), join(dir, "ceiling.db")], dir);

function rss(pid: number): { rss: number; peak: number } {
  const s = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0) / 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}`, ...(init.headers as object) } });
  if (res.status >= 400) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

function sampleIds(dbFile: string, table: string, n: number): string[] {
  const db = new Database(dbFile, { readonly: true });
  const ids = (db.query(`SELECT _id FROM ${table} ORDER BY random() LIMIT ${n}`).all() as { _id: string }[]).map((x) => x._id);
  db.close();
  return ids;
}

// ---- build and cold start ----
if (!args.includes("--no-build")) {
  const b = Bun.spawnSync(["npm", "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
  if (b.exitCode !== 0) throw new Error("build failed");
}
const binarySize = statSync(BIN).size / 1024 / 1024;
const coldStarts: number[] = [];
for (let i = 0; i < 5; i++) {
  const dir = mkdtempSync(join(tmpdir(), "baas-cold-"));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const t0 = performance.now();
  const proc = Bun.spawn([BIN, "serve", "--port", String(port), "--host", "127.0.0.1", "--data", dir], { env: { ...process.env, ADMIN_SECRET: SECRET }, stdout: "ignore", stderr: "ignore" });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) break;
    } catch {}
    await Bun.sleep(2);
  }
  coldStarts.push(performance.now() - t0);
  proc.kill();
  await proc.exited;
  rmSync(dir, { recursive: true, force: true });
}
coldStarts.sort((a, b) => a - b);

// ---- servers ----
const baasDir = mkdtempSync(join(tmpdir(), "baas-bench-"));
const ceilDir = mkdtempSync(join(tmpdir(), "baas-ceil-"));
const baas = await startBaas(baasDir);
const ceil = await startCeiling(ceilDir);
await Bun.sleep(300);
const idle = rss(baas.proc.pid);

await json(`${baas.url}/api/v1/admin/collections`, {
  method: "POST",
  body: JSON.stringify({ name: "items", rules: { read: "public", create: "public", update: "public", delete: "public" } }),
});
// Fix the field types and create the same index and full-text index as the ceiling has.
await json(`${baas.url}/api/v1/items`, { method: "POST", body: JSON.stringify(record()) });
await json(`${baas.url}/api/v1/admin/collections/items/indexes`, { method: "POST", body: JSON.stringify({ fields: ["category", "score"] }) });
await json(`${baas.url}/api/v1/admin/collections/items/fts`, { method: "POST" });
for (const base of [baas.url, ceil.url]) {
  await fetch(`${base}/api/v1/auth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1" }) });
}

const rows: { name: string; unit: string; baas: Result; ceil: Result; scale?: number }[] = [];
async function workload(name: string, unit: string, make: (base: string, dbFile: string, table: string) => object[], o: Parameters<typeof load>[2], scale = 1) {
  const b = await load(baas.url, make(baas.url, join(baasDir, "baas.db"), "items"), o);
  const c = await load(ceil.url, make(ceil.url, join(ceilDir, "ceiling.db"), "items"), o);
  rows.push({ name, unit, baas: b, ceil: c, scale });
  process.stderr.write(`${name}: baas ${b.rps.toFixed(0)}/s (p99 ${b.p99.toFixed(1)} ms, ${b.errors} errors ${b.firstError}) · ceiling ${c.rps.toFixed(0)}/s\n`);
}

const bulkBodies = Array.from({ length: RECORDS / 500 }, () => ({ method: "POST", path: "/api/v1/items/bulk", body: JSON.stringify(Array.from({ length: 500 }, record)) }));
await workload("W4 bulk insert 100,000 records (500 per request)", "records/s", () => bulkBodies, { concurrency: 4, total: bulkBodies.length }, 500);
const creates = Array.from({ length: 2000 }, () => ({ method: "POST", path: "/api/v1/items", body: JSON.stringify(record()) }));
await workload("W1 create", "req/s", () => creates, { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 });
await workload("W2 get by id", "req/s", (_b, db, t) => sampleIds(db, t, 2000).map((id) => ({ method: "GET", path: `/api/v1/items/${id}` })), { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 });
const lists = Array.from({ length: 200 }, (_, i) => ({ method: "GET", path: `/api/v1/items?filter=category:eq:c${i % 20}&sort=-score&limit=50` }));
await workload("W3 filtered + sorted list (limit 50) over 100k", "req/s", () => lists, { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 });
// Each record carries one of 1,000 tags (about 100 records each): searches for a tag, a tag and
// a common word, and a tag prefix, the way an app searches for something specific.
const searches = Array.from({ length: 30 }, (_, i) => {
  const q = i % 3 === 0 ? `tag${i * 31}` : i % 3 === 1 ? `tag${i * 17} ${WORDS[i % WORDS.length]}` : `tag${i * 7}*`;
  return { method: "GET", path: `/api/v1/items?search=${encodeURIComponent(q)}&limit=50` };
});
await workload("W5 full-text search for a tag (limit 50)", "req/s", () => searches, { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 });
const logins = [{ method: "POST", path: "/api/v1/auth/login", body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1" }) }];
await workload("W6 login (argon2id)", "req/s", () => logins, { concurrency: 8, total: 200 });

const peak = rss(baas.proc.pid);
baas.proc.kill();
ceil.proc.kill();
await Promise.all([baas.proc.exited, ceil.proc.exited]);
rmSync(baasDir, { recursive: true, force: true });
rmSync(ceilDir, { recursive: true, force: true });

// ---- report ----
const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const cpu = cpus()[0]?.model ?? "unknown CPU";
const lines = [
  "# Benchmark results",
  "",
  `Machine: ${cpus().length} cores (${cpu}), ${fmt(totalmem() / 1024 ** 3, 0)} GiB RAM, Linux, Bun ${Bun.version}.`,
  `Load generator: bench/load.ts in a separate process on 127.0.0.1 (keep-alive fetch); ${SECONDS} s per timed workload after a 0.5 s warm-up.`,
  `Ceiling: bench/ceiling.ts, a bare Bun.serve + bun:sqlite program doing the same SQL and JSON work with no rules, catalog or validation.`,
  "",
  "| Workload | baas | p50 ms | p99 ms | ceiling | ceiling p99 ms | ratio (baas/ceiling) | errors |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((x) => {
    const s = x.scale ?? 1;
    return `| ${x.name} | ${fmt(x.baas.rps * s)} ${x.unit} | ${fmt(x.baas.p50, 1)} | ${fmt(x.baas.p99, 1)} | ${fmt(x.ceil.rps * s)} ${x.unit} | ${fmt(x.ceil.p99, 1)} | ${fmt((x.baas.rps / x.ceil.rps) * 100)}% | ${x.baas.errors} |`;
  }),
  "",
  "| Resource | Value |",
  "|---|---:|",
  `| Binary size (dist/baas) | ${fmt(binarySize, 1)} MiB |`,
  `| Cold start to first /health 200 (median of 5) | ${fmt(coldStarts[2], 0)} ms |`,
  `| Idle RSS after start | ${fmt(idle.rss, 1)} MiB |`,
  `| Peak RSS over the run | ${fmt(peak.peak, 1)} MiB |`,
  "",
];
const report = lines.join("\n");
process.stdout.write(report + "\n");
const resultsFile = join(ROOT, "bench/RESULTS.md");
let existing = "";
try {
  existing = readFileSync(resultsFile, "utf8");
} catch {}
// Keep any hand-written analysis below the generated table.
const marker = "<!-- analysis -->";
const analysis = existing.includes(marker) ? existing.slice(existing.indexOf(marker)) : `${marker}\n`;
writeFileSync(resultsFile, `${report}\n${analysis}`);
