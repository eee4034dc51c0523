// Per-request overhead, in process: a fixed loop of app.handle requests (no sockets, no load
// generator), so the figures do not depend on what else runs on the machine as much as req/s do.
// Prints CPU microseconds per request for each workload. Run it under `bun --cpu-prof` and read
// the profile with bench/profile-top.ts to see where the time goes. Requests go in batches of CONC
// (default 1) started in one event-loop turn, as a loaded server receives them; with CONC=1 each
// request has a turn of its own, so once-per-turn work counts every time. CLIENTS=32 instead runs 32
// clients that each send their next request, in a later turn, once the previous one is answered (as
// wrk's connections do): requests then arrive spread over turns, and reads meet open write transactions.
//
//   [CONC=32 | CLIENTS=32] [SHAPE=bench] [DATABASE_URL=postgres://…] bun bench/overhead.ts [get|get-anon|list|w3|create|bulk|all] [iterations]
// With DATABASE_URL (an empty database), the same on PostgreSQL; the CPU figure is then this process's only,
// unless PG_POSTMASTER_PID names the server's postmaster (a cluster of its own, on this machine): then the
// CPU of PostgreSQL's processes over the loop is printed too (live backends, plus those that ended, which
// the postmaster has reaped).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureAdminSecret } from "../src/auth/admin.ts";
import { ensureJwtKey } from "../src/auth/keys.ts";
import { loadConfig } from "../src/config.ts";
import { closeContext, openContext } from "../src/app-context.ts";
import { startCheckpointer } from "../src/db/checkpointer.ts";
import { createApp } from "../src/http/app.ts";
import { createLogger } from "../src/log.ts";

const SECRET = "bench-admin-secret-0123456789";
const which = process.argv[2] ?? "all";
const N = Number(process.argv[3] ?? 20000);
const RECORDS = 20000;
const CONC = Number(process.env.CONC ?? 1);
const CLIENTS = Number(process.env.CLIENTS ?? 0);

const dir = mkdtempSync(join(tmpdir(), "baas-overhead-"));
const config = loadConfig({ data: dir, port: 0 }, { ...process.env, ADMIN_SECRET: SECRET });
// The request log goes where a server's goes (stderr); run with 2>/dev/null.
const ctx = await openContext(config, { log: createLogger({ format: config.logFormat, level: config.logLevel, buffered: true }) });
await ensureJwtKey(ctx);
// As `baas serve` does: WAL checkpoints on a worker thread (CHECKPOINT=inline keeps SQLite's own, in the commit).
const checkpointer = process.env.CHECKPOINT === "inline" ? null : startCheckpointer(ctx.db, config.dbPath);
await ensureAdminSecret(ctx);
const app = createApp(ctx);

const postmaster = Number(process.env.PG_POSTMASTER_PID ?? 0);
/** The fields of /proc/<pid>/stat after the command name, or null once the process is gone. */
const procStat = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  } catch {
    return null;
  }
};
/** CPU microseconds of the PostgreSQL cluster so far (clock ticks of 10 ms). */
function postgresCpu(): number {
  const pm = procStat(postmaster);
  if (!pm) return 0;
  let ticks = +pm[11]! + +pm[12]! + +pm[13]! + +pm[14]!;
  for (const d of readdirSync("/proc")) {
    const s = /^\d+$/.test(d) ? procStat(Number(d)) : null;
    if (s && Number(s[1]) === postmaster) ticks += +s[11]! + +s[12]!;
  }
  return ticks * 10_000;
}

async function call(method: string, path: string, body?: unknown, token?: string): Promise<any> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
// SHAPE=bench: the record of ../shared/bench (a title, a number, an array of two tags, a boolean), whose
// array is a JSON column; the default shape has scalar fields only.
const TAGS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"];
const record =
  process.env.SHAPE === "bench"
    ? () => ({ title: `seed post ${String(Math.floor(rand() * 1e8)).padStart(8, "0")} lorem ipsum`, category: `c${Math.floor(rand() * 20)}`, score: Math.floor(rand() * 1000), tags: [TAGS[Math.floor(rand() * 8)], TAGS[Math.floor(rand() * 8)]], done: rand() < 0.5 })
    : () => ({ title: `item ${Math.floor(rand() * 1e6)}`, category: `c${Math.floor(rand() * 20)}`, score: Math.floor(rand() * 1000), done: false });

await call("POST", "/api/v1/admin/collections", { name: "items", rules: { read: "public", create: "public", update: "public", delete: "public" } }, SECRET);
await call("POST", "/api/v1/items", record());
await call("POST", "/api/v1/admin/collections/items/indexes", { fields: ["category", "score"] }, SECRET);
// w3 (../shared/bench's W3: a range on one field, sorted by it, with the page's total) needs its own index.
if (which === "w3") await call("POST", "/api/v1/admin/collections/items/indexes", { fields: ["score"] }, SECRET);
for (let i = 0; i < RECORDS; i += 500) await call("POST", "/api/v1/items/bulk", Array.from({ length: 500 }, record));
const user = await call("POST", "/api/v1/auth/register", { email: "bench@example.com", password: "bench-password-1" });
const token = user.access_token as string;
const ids = (await ctx.db.all("SELECT _id FROM items LIMIT 2000") as { _id: string }[]).map((r) => r._id);

const workloads: Record<string, (i: number) => Promise<unknown>> = {
  get: (i) => call("GET", `/api/v1/items/${ids[i % ids.length]}`, undefined, token),
  "get-anon": (i) => call("GET", `/api/v1/items/${ids[i % ids.length]}`),
  list: (i) => call("GET", `/api/v1/items?filter=category:eq:c${i % 20}&sort=-score&limit=50`, undefined, token),
  w3: () => call("GET", "/api/v1/items?filter=score:gt:500&sort=score:desc&limit=50"),
  create: () => call("POST", "/api/v1/items", record(), token),
  // W4's request: 500 records at once (iterations count requests; µs are per request of 500).
  bulk: () => call("POST", "/api/v1/items/bulk", Array.from({ length: 500 }, record), token),
};

for (const [name, run] of Object.entries(workloads)) {
  // w3 only when asked (its index would weigh on the others' writes).
  if (which === "all" ? name === "w3" : which !== name) continue;
  const n = name === "list" || name === "w3" ? Math.ceil(N / 10) : name === "bulk" ? Math.ceil(N / 100) : N;
  const turn = () => new Promise((r) => setImmediate(r));
  const times: number[] = [];
  const batch = async (i: number) => {
    const all: Promise<unknown>[] = [];
    const t = performance.now();
    for (let j = 0; j < CONC; j++) all.push(run(i + j));
    await Promise.all(all);
    times.push(performance.now() - t);
    await turn();
  };
  const clients = async (count: number) => {
    let next = 0;
    const client = async () => {
      for (let i = next++; i < count; i = next++) {
        await turn();
        const t = performance.now();
        await run(i);
        times.push(performance.now() - t);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
  };
  const loop = async (count: number) => {
    if (CLIENTS) await clients(count);
    else for (let i = 0; i < count; i += CONC) await batch(i);
  };
  await loop(Math.min(n, 500)); // warm-up
  times.length = 0;
  const from = Math.round((performance.timeOrigin + performance.now()) * 1000);
  const pg0 = postmaster ? postgresCpu() : 0;
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  await loop(n);
  const cpu = process.cpuUsage(t0);
  const wall = performance.now() - w0;
  const pg = postmaster ? `, PostgreSQL ${((postgresCpu() - pg0) / n).toFixed(1)} µs CPU/request` : "";
  const to = Math.round((performance.timeOrigin + performance.now()) * 1000);
  times.sort((a, b) => a - b);
  const pct = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(2);
  console.log(
    `${name}: ${n} requests, ${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU/request${pg}, ${((wall * 1000) / n).toFixed(1)} µs wall/request, ` +
      `${CLIENTS ? `request (${CLIENTS} clients)` : `batch of ${CONC}`} ms p50 ${pct(0.5)} p99 ${pct(0.99)} max ${pct(1)}, --window=${from},${to}`,
  );
}

await checkpointer?.stop();
closeContext(ctx);
rmSync(dir, { recursive: true, force: true });
