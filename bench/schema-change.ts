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
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const opt: Record<string, string> = {};
for (let i = 0; i < args.length; i++) {
  const k = args[i]!.replace(/^--/, "");
  if (k === "postgres") opt.postgres = "1";
  else opt[k] = args[++i]!;
}
if (opt.postgres) opt.database = await (await import("../test/helpers/postgres.ts")).createTestDatabase({ migrated: true });
const RECORDS = Number(opt.records ?? 100_000);
const SECRET = "bench-schema-secret-0123456789";
const ROOT = resolve(import.meta.dir, "..");

const dir = mkdtempSync(join(tmpdir(), "baas-bench-schema-"));
const server = Bun.spawn([process.execPath, join(ROOT, "cli/index.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir, ...(opt.database ? ["--database", opt.database] : [])], {
  env: { ...process.env, ADMIN_SECRET: SECRET, LOG_LEVEL: "warn" },
  stdout: "ignore",
  stderr: "pipe",
});
let log = "";
const port = await new Promise<number>((ok, fail) => {
  const timer = setTimeout(() => fail(new Error(`server did not start: ${log}`)), 30_000);
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of server.stderr as unknown as AsyncIterable<Uint8Array>) {
      log += decoder.decode(chunk);
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    }
  })();
});
const base = `http://127.0.0.1:${port}/api/v1`;
const headers = { authorization: `Bearer ${SECRET}`, "content-type": "application/json" };

async function call(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

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
  if (process.env.SHOW_SERVER_LOG) console.error(log);
  server.kill();
  await server.exited;
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
