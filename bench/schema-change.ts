export {};
// Rename and change of type of a field over 100,000 records (CONTRACT §13), on a real server, and whether reads
// and writes wait meanwhile. Starts `baas serve` (from source) on a fresh data directory, or on a PostgreSQL
// database with --database; makes `items` (RECORDS records: title text, n text holding a number, flag boolean)
// (and `note`, which the writer below sets), and `other` (1,000 records); then for each change runs, while the change's request is in flight, one reader
// of `items` (GET by id), one writer of `items` (POST) and one reader of `other` (GET by id), each one request
// after the other, as anonymous clients (the collections' rules let anyone read and create; a request with the
// admin secret would wait anyway: each use of the secret is counted in a write transaction), and reports the change's time and, per loop, how many requests completed during it and the
// longest one. A loop whose longest request is about as long as the change waited for it.
//
// usage: bun bench/schema-change.ts [--database postgres://… | --postgres] [--records 100000] [--out FILE.md]
//   --postgres: on a throwaway PostgreSQL cluster, made and removed as the tests do (test/helpers/postgres.ts)

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiCaller, benchOptions, startSource } from "./harness.ts";

const opt = await benchOptions();
const RECORDS = Number(opt.records ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), "baas-bench-schema-"));
const server = await startSource(dir, opt.database, { LOG_LEVEL: "warn" });
const base = `${server.url}/api/v1`;
const call = apiCaller(server.url);

await call("POST", "/admin/collections", { name: "items", rules: { read: "public", create: "public" }, fields: [{ name: "title", type: "text" }, { name: "n", type: "text" }, { name: "flag", type: "boolean" }, { name: "note", type: "text" }] });
await call("POST", "/admin/collections", { name: "other", rules: { read: "public", create: "public" }, fields: [{ name: "v", type: "number" }] });
const ids: string[] = [];
for (let from = 0; from < RECORDS; from += 500) {
  const made = await call("POST", "/items/bulk", Array.from({ length: Math.min(500, RECORDS - from) }, (_, k) => ({ title: `title ${from + k}`, n: String(from + k), flag: (from + k) % 2 === 0 })));
  if (from < 50_000) for (const r of made) ids.push(r._id);
}
const otherIds: string[] = [];
for (let from = 0; from < 1000; from += 500) for (const r of await call("POST", "/other/bulk", Array.from({ length: 500 }, (_, i) => ({ v: from + i })))) otherIds.push(r._id);

interface LoopResult {
  done: number;
  max: number;
  errors: number;
}

/** Runs `one` again and again until `stop` says so; counts the requests and their longest time. */
async function loop(one: (i: number) => Promise<Response>, stop: () => boolean): Promise<LoopResult> {
  const out: LoopResult = { done: 0, max: 0, errors: 0 };
  for (let i = 0; !stop(); i++) {
    const s = performance.now();
    const res = await one(i);
    await res.arrayBuffer();
    out.max = Math.max(out.max, performance.now() - s);
    if (res.ok) out.done++;
    else out.errors++;
  }
  return out;
}

const rows: string[] = [];
async function measure(label: string, method: string, path: string, body: unknown): Promise<void> {
  let running = true;
  const stop = () => !running;
  const pick = (i: number, list: string[]) => list[(i * 7919) % list.length]!;
  const loops = Promise.all([
    loop((i) => fetch(`${base}/items/${pick(i, ids)}`), stop),
    loop((i) => fetch(`${base}/items`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ note: `written ${i}` }) }), stop),
    loop((i) => fetch(`${base}/other/${pick(i, otherIds)}`), stop),
  ]);
  // The loops start first, so the change lands while they run.
  await Bun.sleep(50);
  const s = performance.now();
  await call(method, path, body);
  const took = performance.now() - s;
  running = false;
  const [reads, writes, other] = await loops;
  const cell = (r: LoopResult) => `${r.done} done, longest ${r.max.toFixed(0)} ms${r.errors ? `, ${r.errors} errors` : ""}`;
  rows.push(`| ${label} | ${took.toFixed(0)} ms | ${cell(reads)} | ${cell(writes)} | ${cell(other)} |`);
  console.error(rows.at(-1));
}

try {
  await measure("rename title → headline", "PATCH", "/admin/collections/items/fields/title", { name: "headline" });
  await measure("retype n text → number", "PATCH", "/admin/collections/items/fields/n", { type: "number" });
  await measure("retype n number → text", "PATCH", "/admin/collections/items/fields/n", { type: "text" });
  await measure("retype flag boolean → text", "PATCH", "/admin/collections/items/fields/flag", { type: "text" });
  await measure("rename headline → title", "PATCH", "/admin/collections/items/fields/headline", { name: "title" });
} finally {
  server.proc.kill();
  await server.proc.exited;
  rmSync(dir, { recursive: true, force: true });
}

const engine = opt.database ? "PostgreSQL" : "SQLite";
const table = [
  `${engine}, ${RECORDS.toLocaleString("en")} records in \`items\`:`,
  "",
  "| Change | Time | Reads of `items` meanwhile | Writes to `items` meanwhile | Reads of `other` meanwhile |",
  "|---|---:|---|---|---|",
  ...rows,
].join("\n");
console.log(table);
if (opt.out) writeFileSync(opt.out, table + "\n");
