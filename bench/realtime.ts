// Realtime benchmark: `bun bench/realtime.ts [subscribers=1000] [writes_per_s=200] [seconds=10]`.
// Starts dist/baas (`BAAS_BIN` to choose another binary; the source when there is none) on a fresh data dir, then:
//   1. W1 create (32 connections, fresh body per request, as the regular user) with no subscriber;
//   2. opens the subscribers (a separate process, anonymous streams on `chat`, public read) and writes
//      `writes_per_s` chat messages a second: delivery delay commit → client, p50 and p99 over every
//      delivery, the server's RSS and its CPU time per delivered event;
//   3. W1 again while the subscribers stay connected and the chat writes go on.
// As ../shared/bench does it, on a machine with 2+ CPUs the server runs pinned to CPU 1 and everything
// that makes load (this process and its chat writer, the subscriber process, the W1 load generator)
// to CPU 0 (`BENCH_PIN=0` turns that off; `SERVER_CPU`, `CLIENT_CPU` choose the CPUs). W1 is driven by
// wrk with ../shared/bench's create script when both are there (`BENCH_W1=wrk`, the default then), else
// by the in-process loader bench/load.ts (`BENCH_W1=bun`); `BENCH_W1=none` measures the fan-out alone. `W1_SECONDS` (5) is each W1 run's measured time.
// `BENCH_ROOMS=N` (the rooms mode): `chat` is read under `@exists(members, room = @record.room && user = @auth.id)`;
// every subscriber signs in as its own user (made by the admin API, signed in by impersonation), a member of
// one of N rooms, and the writes go round the rooms, so each reaches a tenth of the streams at N = 10.
// `BENCH_TARGET=ceiling` (with `BENCH_W1=none`): the same subscribers and writes against bench/realtime-ceiling.ts, a
// bare Bun.serve that sends each message to every stream at once (what "the bare fan-out" means in bench/RESULTS.md).
// Prints a Markdown table for bench/RESULTS.md.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, load, startProc } from "./harness.ts";

const [SUBS = 1000, RATE = 200, SECONDS = 10] = process.argv.slice(2).map(Number);
const W1_SECONDS = Number(process.env.W1_SECONDS ?? 5);
const PIN = (process.env.BENCH_PIN ?? (availableParallelism() >= 2 ? "1" : "0")) === "1" && !!Bun.which("taskset");
const pinned = (cpu: string | undefined, fallback: string) => (cmd: string[]) => (PIN ? ["taskset", "-c", cpu ?? fallback, ...cmd] : cmd);
const onServerCpu = pinned(process.env.SERVER_CPU, "1");
const onClientCpu = pinned(process.env.CLIENT_CPU, "0");
// This process (its chat writer) makes load too: off the server's CPU, every thread of it.
if (PIN) Bun.spawnSync(["taskset", "-apc", process.env.CLIENT_CPU ?? "0", String(process.pid)], { stdout: "ignore" });
const SHARED_BENCH = process.env.SHARED_BENCH ?? join(ROOT, "../shared/bench");
const WRK_LIB = join(SHARED_BENCH, "lib/wrk");
const W1_MODE = process.env.BENCH_W1 ?? (Bun.which("wrk") && existsSync(join(WRK_LIB, "create.lua")) ? "wrk" : "bun");
const useWrk = W1_MODE === "wrk";
// BENCH_W1=none: the fan-out alone (no W1 runs), for comparing its CPU cost between builds.
const NO_W1 = { rps: NaN, p99: NaN, errors: 0, serverCpu: NaN };

const dir = mkdtempSync(join(tmpdir(), "baas-rt-bench-"));
const bin = process.env.BAAS_BIN ?? BIN;
// BENCH_TARGET=ceiling: the same subscribers and writes against bench/realtime-ceiling.ts, a bare fan-out (no W1, no rooms).
const CEILING = process.env.BENCH_TARGET === "ceiling";
if (CEILING && (process.env.BENCH_ROOMS || W1_MODE !== "none")) throw new Error("BENCH_TARGET=ceiling measures the public fan-out alone: set BENCH_W1=none, no BENCH_ROOMS");
// BENCH_CPU_PROF=dir: the source under `bun --cpu-prof`, the profile written into dir when the server stops.
const prof = process.env.BENCH_CPU_PROF;
const cmd = prof
  ? [process.execPath, "--cpu-prof", "--cpu-prof-dir", prof, join(ROOT, "cli/index.ts")]
  : (await Bun.file(bin).exists()) ? [bin] : [process.execPath, join(ROOT, "cli/index.ts")];
const server = CEILING
  ? await startProc(onServerCpu([process.execPath, join(ROOT, "bench/realtime-ceiling.ts")]), dir)
  : await startProc(onServerCpu([...cmd, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir]), dir, { ADMIN_SECRET: SECRET });
const base = server.url;
const api = async (method: string, path: string, body?: unknown, token = SECRET) => {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<any>;
};

/** The fields of /proc/<pid>/stat after the command name: [11] user time, [12] system time, in ticks. */
const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
/** CPU seconds (user + system) a process has used so far. */
const cpu = (pid: number) => {
  const fields = stat(pid);
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
/** CPU seconds a process has spent in the kernel (its system time) so far. */
const systemCpu = (pid: number) => Number(stat(pid)[12]) / 100;

/** Resident set size of the server process, MiB. */
const rss = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.proc.pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
};

const ROOMS = Number(process.env.BENCH_ROOMS ?? 0);
const ROOM_RULE = "@exists(members, room = @record.room && user = @auth.id)";
let token = "";
if (!CEILING) {
  await api("PATCH", "/admin/settings", { realtime_max_streams_per_ip: SUBS + 100, realtime_max_topics_per_ip: SUBS * 2 + 100 });
  await api("POST", "/admin/collections", { name: "posts", rules: { read: "public", create: "authenticated" } });
  const user = await api("POST", "/auth/register", { email: "bench@example.com", password: "bench-password-1" }, "");
  token = user.access_token as string;
}
/** In the rooms mode, one token per subscriber: user i is a member of room i % ROOMS. */
const subscriberTokens: string[] = [];
if (ROOMS) {
  await api("POST", "/admin/collections", { name: "members", fields: [{ name: "room", type: "text" }, { name: "user", type: "text" }] });
  await api("POST", "/admin/collections/members/indexes", { fields: ["room", "user"] });
}
if (!CEILING)
  await api("POST", "/admin/collections", {
    name: "chat",
    fields: [{ name: "text", type: "text" }, { name: "room", type: "text" }],
    rules: { read: ROOMS ? ROOM_RULE : "public", create: "authenticated" },
  });
if (ROOMS) {
  const ids: string[] = new Array(SUBS);
  for (let i = 0; i < SUBS; i += 20)
    await Promise.all(
      Array.from({ length: Math.min(20, SUBS - i) }, async (_, k) => {
        const u = await api("POST", "/admin/users", { email: `member${i + k}@example.com` });
        ids[i + k] = u.id;
        subscriberTokens[i + k] = (await api("POST", `/admin/users/${u.id}/impersonate`)).access_token;
      }),
    );
  for (let i = 0; i < SUBS; i += 500)
    await api("POST", "/members/bulk", ids.slice(i, i + 500).map((id, k) => ({ room: `room${(i + k) % ROOMS}`, user: id })));
}

const colours = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"];
const w1Requests = Array.from({ length: 2000 }, (_, i) => ({
  method: "POST",
  path: "/api/v1/posts",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: JSON.stringify({
    title: `load post ${String(i).padStart(8, "0")} lorem ipsum`,
    n: i % 1000,
    tags: [colours[i % 8], colours[(i * 3) % 8]],
    done: i % 2 === 0,
  }),
}));
/** W1 as ../shared/bench runs it: wrk, 1 thread, 32 connections, a 3 s warm-up then the measured run. */
async function wrkW1(): Promise<{ rps: number; p99: number; errors: number }> {
  const out = join(dir, "wrk.json");
  const run = async (seconds: number) => {
    const p = Bun.spawn(
      onClientCpu(["wrk", "-t1", "-c32", `-d${seconds}s`, "--timeout", "10s", "--latency", "-s", join(WRK_LIB, "create.lua"),
        "-H", `Authorization: Bearer ${token}`, `${base}/api/v1/posts`]),
      { env: { ...process.env, WRK_LIB, WRK_JSON: out, W_PATH: "/api/v1/posts" }, stdout: "ignore", stderr: "inherit" },
    );
    if ((await p.exited) !== 0) throw new Error("wrk failed");
  };
  await run(3);
  await run(W1_SECONDS);
  const r = JSON.parse(readFileSync(out, "utf8"));
  const e = r.errors;
  return { rps: r.rps, p99: r.latency_us.p99 / 1000, errors: e.connect + e.read + e.write + e.status + e.timeout };
}
const w1 = async () => {
  if (W1_MODE === "none") return NO_W1;
  const at = { cpu: cpu(server.proc.pid), t: performance.now() };
  const r = useWrk ? await wrkW1() : await load(base, w1Requests, { concurrency: 32, durationMs: W1_SECONDS * 1000, warmupMs: 1_000 }, onClientCpu);
  return { ...r, serverCpu: (cpu(server.proc.pid) - at.cpu) / ((performance.now() - at.t) / 1000) };
};

const w0At = Date.now();
const without = await w1();
const w0End = Date.now();
const idleRss = rss();

// Subscribers in their own process; the server's CPU while they connect (each stream opened: its request, the
// `connect` event, the limits' counts).
const connectFrom = { cpu: cpu(server.proc.pid), at: performance.now() };
const specFile = join(tmpdir(), `baas-rt-subs-${process.pid}.json`);
writeFileSync(specFile, JSON.stringify({ url: `${base}/api/v1/realtime?subscribe=chat`, count: SUBS, tokens: subscriberTokens }));
const subs = Bun.spawn(onClientCpu([process.execPath, join(ROOT, "bench/realtime-subscribers.ts"), specFile]), {
  stdin: "pipe",
  stdout: "pipe",
  stderr: "inherit",
});
const lines = (async function* () {
  const decoder = new TextDecoder();
  let buf = "";
  const reader = subs.stdout.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf += decoder.decode(value);
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
})();
const ready = JSON.parse((await lines.next()).value!);
const afterConnect = rss();
const connectCost = { seconds: (performance.now() - connectFrom.at) / 1000, cpu: cpu(server.proc.pid) - connectFrom.cpu };

// A steady writer: RATE chat messages a second, each its own request, as the regular user.
let writing = true;
let written = 0;
let writeErrors = 0;
const writer = (async () => {
  const start = performance.now();
  while (writing) {
    const due = start + (written * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    written++;
    fetch(`${base}/api/v1/chat`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ text: `message ${written}`, room: ROOMS ? `room${written % ROOMS}` : "bench" }),
    }).then((r) => (r.ok ? r.arrayBuffer() : (writeErrors++, r.arrayBuffer())), () => writeErrors++);
  }
})();
let peakRss = afterConnect;
const cpuStart = { server: cpu(server.proc.pid), serverSys: systemCpu(server.proc.pid), subs: cpu(subs.pid), at: performance.now() };
const cpuStartEpoch = Date.now();
const sampler = setInterval(() => (peakRss = Math.max(peakRss, rss())), 200);
await Bun.sleep(SECONDS * 1000);
const report = async () => {
  subs.stdin.write("report\n");
  subs.stdin.flush();
  return JSON.parse((await lines.next()).value!);
};
const delivery = await report();
const steadySeconds = (performance.now() - cpuStart.at) / 1000;
const steady = {
  server: (cpu(server.proc.pid) - cpuStart.server) / steadySeconds,
  serverSys: (systemCpu(server.proc.pid) - cpuStart.serverSys) / steadySeconds,
  subs: (cpu(subs.pid) - cpuStart.subs) / steadySeconds,
};
// Server CPU per delivered event: what the chat writes and their fan-out cost it, over every delivery.
const perDelivery = (1e6 * steady.server * steadySeconds) / Math.max(1, delivery.deliveries);
const w1At = Date.now();
const withSubs = await w1();
// The windows of bench/profile-top.ts (epoch microseconds) for the two phases with subscribers.
if (prof) console.error(`--window=${w0At * 1000},${w0End * 1000} (W1 alone)  --window=${cpuStartEpoch * 1000},${w1At * 1000} (steady)  --window=${w1At * 1000},${Date.now() * 1000} (W1 with subscribers)`);
writing = false;
await writer;
await Bun.sleep(500);
clearInterval(sampler);
const busy = await report();
subs.stdin.end();
await subs.exited;
server.proc.kill("SIGTERM");
await server.proc.exited;
rmSync(dir, { recursive: true, force: true });
rmSync(specFile, { force: true });

const f = (n: number, d = 1) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`| Figure | Value |
|---|---:|
| ${CEILING ? "the bare fan-out (bench/realtime-ceiling.ts): " : ""}subscribers connected (${ROOMS ? `each its own user, in ${ROOMS} rooms, read rule \`${ROOM_RULE}\`` : "anonymous"}, topic \`chat\`) | ${ready.connected} (${ready.failures} refused) |
| opening them: wall time / server CPU per stream | ${connectCost.seconds.toFixed(1)} s / ${((connectCost.cpu / Math.max(1, ready.connected)) * 1e6).toFixed(0)} µs |
| chat writes | ${RATE}/s for ${SECONDS} s, then on during the second W1 run (${written} sent, ${writeErrors} errors) |
| deliveries in the ${SECONDS} s | ${delivery.deliveries.toLocaleString("en-US")} (${delivery.resets} resets), ${f(delivery.deliveries / Math.max(1, delivery.reads))} events per read (a read takes one server write or more) |
| delivery delay commit → client, p50 / p99 / max | ${f(delivery.p50, 0)} / ${f(delivery.p99, 0)} / ${f(delivery.max, 0)} ms |
| the same during the second W1 run (${busy.deliveries.toLocaleString("en-US")} deliveries, ${busy.resets} resets in all) | ${f(busy.p50, 0)} / ${f(busy.p99, 0)} / ${f(busy.max, 0)} ms |
| CPU while only the chat writes run: server (of which in the kernel) / subscriber process | ${f(100 * steady.server, 0)}% (${f(100 * steady.serverSys, 0)}%) / ${f(100 * steady.subs, 0)}% of one core |
| server CPU per delivered event (writes included) | ${f(perDelivery, 2)} µs |
| server RSS: idle after W1 / with subscribers connected / peak | ${f(idleRss)} / ${f(afterConnect)} / ${f(peakRss)} MiB |
${W1_MODE === "none" ? "" : `| W1 create without subscribers (${useWrk ? "wrk" : "bench/load.ts"}, ${PIN ? "server on its own CPU" : "not pinned"}) | ${f(without.rps, 0)} req/s, p99 ${f(without.p99)} ms (${without.errors} errors), server CPU ${f(100 * without.serverCpu, 0)}% |
| W1 create with subscribers and the chat writes | ${f(withSubs.rps, 0)} req/s, p99 ${f(withSubs.p99)} ms (${withSubs.errors} errors), server CPU ${f(100 * withSubs.serverCpu, 0)}% |
| ratio with / without | ${f((100 * withSubs.rps) / without.rps, 0)}% |`}`);
process.exit(0);
