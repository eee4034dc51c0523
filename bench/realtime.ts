// Realtime benchmark: `bun bench/realtime.ts [subscribers=1000] [writes_per_s=200] [seconds=10]`.
// Starts dist/baas (or the source when it is not built) on a fresh data dir, then:
//   1. W1 create (32 connections, fresh body per request, as the regular user) with no subscriber;
//   2. opens the subscribers (a separate process, anonymous streams on `chat`, public read) and writes
//      `writes_per_s` chat messages a second: delivery delay commit → client, p50 and p99 over every
//      delivery, and the server's RSS;
//   3. W1 again while the subscribers stay connected and the chat writes go on.
// Prints a Markdown table for bench/RESULTS.md.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, load, startProc } from "./harness.ts";

const [SUBS = 1000, RATE = 200, SECONDS = 10] = process.argv.slice(2).map(Number);
const dir = mkdtempSync(join(tmpdir(), "baas-rt-bench-"));
const cmd = (await Bun.file(BIN).exists()) ? [BIN] : [process.execPath, join(ROOT, "cli/index.ts")];
const server = await startProc([...cmd, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir], dir, { ADMIN_SECRET: SECRET });
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

/** Resident set size of the server process, MiB. */
const rss = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.proc.pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
};

await api("PATCH", "/admin/settings", { realtime_max_streams_per_ip: SUBS + 100, realtime_max_topics_per_ip: SUBS * 2 + 100 });
await api("POST", "/admin/collections", { name: "posts", rules: { read: "public", create: "authenticated" } });
await api("POST", "/admin/collections", { name: "chat", rules: { read: "public", create: "authenticated" } });
const user = await api("POST", "/auth/register", { email: "bench@example.com", password: "bench-password-1" }, "");
const token = user.access_token as string;

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
const w1 = () => load(base, w1Requests, { concurrency: 32, durationMs: 5_000, warmupMs: 1_000 });

const without = await w1();
const idleRss = rss();

// Subscribers in their own process.
const specFile = join(tmpdir(), `baas-rt-subs-${process.pid}.json`);
writeFileSync(specFile, JSON.stringify({ url: `${base}/api/v1/realtime?subscribe=chat`, count: SUBS }));
const subs = Bun.spawn([process.execPath, join(ROOT, "bench/realtime-subscribers.ts"), specFile], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
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
      body: JSON.stringify({ text: `message ${written}`, room: "bench" }),
    }).then((r) => (r.ok ? r.arrayBuffer() : (writeErrors++, r.arrayBuffer())), () => writeErrors++);
  }
})();
let peakRss = afterConnect;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, rss())), 200);
await Bun.sleep(SECONDS * 1000);
const withSubs = await w1();
writing = false;
await writer;
await Bun.sleep(500);
clearInterval(sampler);
subs.stdin.write("report\n");
subs.stdin.flush();
const delivery = JSON.parse((await lines.next()).value!);
subs.kill();
server.proc.kill("SIGTERM");
await server.proc.exited;
rmSync(dir, { recursive: true, force: true });
rmSync(specFile, { force: true });

const f = (n: number, d = 1) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`| Figure | Value |
|---|---:|
| subscribers connected (anonymous, topic \`chat\`) | ${ready.connected} (${ready.failures} refused) |
| chat writes | ${RATE}/s for ${SECONDS} s + the second W1 run (${written} sent, ${writeErrors} errors) |
| deliveries measured | ${delivery.deliveries.toLocaleString("en-US")} (${delivery.resets} resets) |
| delivery delay commit → client p50 | ${f(delivery.p50, 0)} ms |
| delivery delay commit → client p99 | ${f(delivery.p99, 0)} ms (max ${f(delivery.max, 0)}) |
| server RSS: idle after W1 / with subscribers connected / peak | ${f(idleRss)} / ${f(afterConnect)} / ${f(peakRss)} MiB |
| W1 create without subscribers | ${f(without.rps, 0)} req/s, p99 ${f(without.p99)} ms (${without.errors} errors) |
| W1 create with subscribers and the chat writes | ${f(withSubs.rps, 0)} req/s, p99 ${f(withSubs.p99)} ms (${withSubs.errors} errors) |
| ratio with / without | ${f((100 * withSubs.rps) / without.rps, 0)}% |`);
process.exit(0);
