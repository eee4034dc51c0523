export {};
// Load generator, run as its own process so it does not share an event loop with the server
// under test: `bun bench/load.ts <spec.json>` prints one JSON result line.
//
// spec: { base, concurrency, durationMs?, total?, requests: [{ method, path, body?, headers? }] }
// Requests are taken in order, cycling, by `concurrency` workers over keep-alive connections.

interface Req {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}
interface Spec {
  base: string;
  concurrency: number;
  durationMs?: number;
  total?: number;
  warmupMs?: number;
  requests: Req[];
  expect?: number;
}

const spec = (await Bun.file(process.argv[2]).json()) as Spec;
const latencies: number[] = [];
let next = 0;
let errors = 0;
let firstError = "";
const expectStatus = spec.expect ?? 0;

async function fire(r: Req): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(spec.base + r.path, {
    method: r.method,
    headers: r.body ? { "content-type": "application/json", ...r.headers } : r.headers,
    body: r.body,
  });
  const body = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (expectStatus ? res.status !== expectStatus : res.status >= 400) {
    errors++;
    firstError ||= `${r.method} ${r.path} → ${res.status} ${new TextDecoder().decode(body.slice(0, 200))}`;
  }
  return ms;
}

// Warm-up: connections, JIT and statement caches, not measured.
const warmEnd = performance.now() + (spec.warmupMs ?? 0);
if (spec.warmupMs) {
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < warmEnd) await fire(spec.requests[next++ % spec.requests.length]);
    }),
  );
}

const start = performance.now();
const deadline = spec.durationMs ? start + spec.durationMs : Infinity;
const total = spec.total ?? Infinity;
let issued = 0;
await Promise.all(
  Array.from({ length: spec.concurrency }, async () => {
    while (performance.now() < deadline && issued < total) {
      issued++;
      latencies.push(await fire(spec.requests[next++ % spec.requests.length]));
    }
  }),
);
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
console.log(
  JSON.stringify({
    requests: latencies.length,
    errors,
    firstError,
    seconds: elapsed,
    rps: latencies.length / elapsed,
    p50: pct(50),
    p99: pct(99),
  }),
);
