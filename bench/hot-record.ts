// Atomic decrements on one hot record (CONTRACT §15): how many `PATCH { "stock-": 1 }` on the SAME record a
// server takes per second at concurrency 32, against a plain `PATCH { "stock": n }` on that record, and the same
// decrement spread over 1,000 records. The field carries `min: 0`, so each decrement checks its result inside
// its transaction. After the load, the record's stock must be its start less the number of 200 answers (no
// decrement lost, none counted twice); the figures say whether it was.
//
// Starts `baas serve` from source on a fresh data directory (or on PostgreSQL with --database / --postgres),
// load generator in its own process (bench/load.ts). Two alternating rounds per workload; mean req/s and worst p99.
//
// usage: bun bench/hot-record.ts [--seconds 5] [--database postgres://… | --postgres]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiCaller, benchOptions, load, startSource, type Result } from "./harness.ts";

const opt = await benchOptions();
const SECONDS = Number(opt.seconds ?? 5);
const START = 1_000_000_000;

const dir = mkdtempSync(join(tmpdir(), "baas-bench-hot-"));
const server = await startSource(dir, opt.database, { LOG_LEVEL: "warn" });
const call = apiCaller(server.url);

try {
  await call("POST", "/admin/collections", {
    name: "products",
    fields: [{ name: "stock", type: "number" }],
    rules: { read: "public", create: "public", update: "public" },
  });
  await call("PUT", "/admin/collections/products/rules", { field_rules: [{ field: "stock", min: 0 }] });
  const hot = (await call("POST", "/products", { stock: START }))._id as string;
  const spread: string[] = [];
  for (let i = 0; i < 1000; i += 500) for (const r of await call("POST", "/products/bulk", Array.from({ length: 500 }, () => ({ stock: START })))) spread.push(r._id);

  const patch = (id: string, body: object) => ({ method: "PATCH", path: `/api/v1/products/${id}`, body: JSON.stringify(body) });
  const workloads: [string, object[]][] = [
    ['`{ "stock-": 1 }` on one record', [patch(hot, { "stock-": 1 })]],
    ['`{ "stock": n }` on the same record', Array.from({ length: 100 }, (_, i) => patch(hot, { stock: START + i }))],
    ['`{ "stock-": 1 }` over 1,000 records', spread.map((id) => patch(id, { "stock-": 1 }))],
  ];
  const o = { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 };
  const results: Result[][] = workloads.map(() => []);
  for (let round = 0; round < 2; round++) for (const [i, [, requests]] of workloads.entries()) results[i]!.push(await load(server.url, requests, o));
  // The check: one run without a warm-up, so that every request it made is counted.
  const before = (await call("GET", `/products/${hot}`)).stock as number;
  const check = await load(server.url, [patch(hot, { "stock-": 1 })], { concurrency: 32, durationMs: 2000 });
  const after = (await call("GET", `/products/${hot}`)).stock as number;
  const engine = opt.database ? "PostgreSQL" : "SQLite";
  console.log(`${engine}, concurrency 32, two alternating rounds of ${SECONDS} s per workload (mean req/s, worst p99):\n`);
  console.log("| Workload | req/s | p50 ms | p99 ms | errors |");
  console.log("|---|---:|---:|---:|---:|");
  for (const [i, [label]] of workloads.entries()) {
    const rs = results[i]!;
    const rps = rs.reduce((n, r) => n + r.rps, 0) / rs.length;
    console.log(`| ${label} | ${rps.toFixed(0)} | ${Math.max(...rs.map((r) => r.p50)).toFixed(1)} | ${Math.max(...rs.map((r) => r.p99)).toFixed(1)} | ${rs.reduce((n, r) => n + r.errors, 0)} |`);
  }
  const firstError = [...results.flat(), check].map((r) => r.firstError).find(Boolean);
  if (firstError) console.log(`\nFirst error: ${firstError}`);
  const ok = check.requests - check.errors;
  console.log(`\nCheck: ${ok.toLocaleString("en")} decrements answered 200 in a 2 s run; the stock went from ${before} to ${after} (${before - after === ok ? "exactly that many" : `a difference of ${before - after}: WRONG`}).`);
} finally {
  server.proc.kill();
  await server.proc.exited;
  rmSync(dir, { recursive: true, force: true });
}
