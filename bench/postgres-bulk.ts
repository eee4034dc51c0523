export {};
// W4 of the shared workload (../shared/bench/WORKLOAD.md) spread over several nodes: the same
// records as its lib/bulk.ts (lib/records.ts, seed 42) in chunks of CHUNK, chunk i sent to node
// i % nodes, one request in flight per node. records/s = records / wall time of all requests.
// Writes the same JSON as lib/bulk.ts and the ids of the first 1,000 records (half from each of
// two nodes), which W2 then reads.
//
// usage: bun bench/postgres-bulk.ts --lib BENCH/lib [--header "Name: value"]... [--records 100000]
//          [--chunk 500] [--ids-out FILE] [--out FILE.json] URL...
const args = process.argv.slice(2);
const opt: Record<string, string> = {};
const headers: Record<string, string> = { "content-type": "application/json" };
const urls: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (!args[i].startsWith("--")) {
    urls.push(args[i]);
    continue;
  }
  const k = args[i].slice(2);
  const v = args[++i];
  if (k === "header") {
    const j = v.indexOf(":");
    headers[v.slice(0, j).trim()] = v.slice(j + 1).trim();
  } else opt[k] = v;
}
if (!opt.lib || !urls.length) throw new Error("usage: postgres-bulk.ts --lib BENCH/lib [options] URL...");
const { findArray, idOf, makeRecord, rng } = await import(`${opt.lib}/records.ts`);
const total = Number(opt.records ?? 100000);
const chunk = Number(opt.chunk ?? 500);

// Every body is built before the clock starts, in the order lib/bulk.ts builds them.
const r = rng(42);
const bodies: string[] = [];
for (let done = 0; done < total; done += chunk) {
  const recs = [];
  for (let i = done; i < Math.min(total, done + chunk); i++) recs.push(makeRecord(i, r));
  bodies.push(JSON.stringify(recs));
}

const idsByChunk: string[][] = [];
const lat: number[] = [];
let failures = 0;
let firstError = "";

async function node(n: number): Promise<void> {
  for (let c = n; c < bodies.length; c += urls.length) {
    const s = performance.now();
    const res = await fetch(urls[n], { method: "POST", headers, body: bodies[c] });
    const text = await res.text();
    lat.push(performance.now() - s);
    if (res.status < 200 || res.status >= 300) {
      failures++;
      firstError ||= `${urls[n]}: HTTP ${res.status}: ${text.slice(0, 300)}`;
      continue;
    }
    idsByChunk[c] = (findArray(JSON.parse(text)) ?? []).map(idOf).filter((x: string | null) => x != null);
  }
}

const t0 = performance.now();
await Promise.all(urls.map((_, n) => node(n)));
const secs = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const ids = idsByChunk.flat().slice(0, 1000);
const result = {
  records: total,
  chunk,
  nodes: urls.length,
  requests: bodies.length,
  failed_requests: failures,
  first_error: firstError || undefined,
  seconds: Number(secs.toFixed(3)),
  records_per_s: Math.round((total - failures * chunk) / secs),
  chunk_ms_p50: Number(lat[Math.floor(lat.length * 0.5)].toFixed(1)),
  chunk_ms_p99: Number(lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))].toFixed(1)),
  ids_captured: ids.length,
};
if (opt["ids-out"] && ids.length) await Bun.write(opt["ids-out"], ids.join("\n") + "\n");
if (opt.out) await Bun.write(opt.out, JSON.stringify(result, null, 1) + "\n");
console.log(JSON.stringify(result));
process.exit(failures ? 1 : 0);
