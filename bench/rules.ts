// The cost of an expression read rule on the W3 list (a page of 50 of 100,000 records, filtered and sorted,
// with its `total`), against the same list under `public`. Starts `baas serve` from source on a fresh data
// directory (or with --database on PostgreSQL), makes two collections of RECORDS records each, written by one
// user (half of them published): `open` with the read rule `public`, `guarded` with
// `status = 'published' || _owner_id = @auth.id`; both with an index on (category, score), as W3, and
// `guarded` with one on status. Then the same list load (as that user, and as another one who owns nothing)
// runs against each; the figures go to stdout as a Markdown table.
//
// usage: bun bench/rules.ts [--records 100000] [--seconds 5] [--database postgres://… | --postgres]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiCaller, benchOptions, load, startSource, type Result } from "./harness.ts";

const opt = await benchOptions();
const RECORDS = Number(opt.records ?? 100_000);
const SECONDS = Number(opt.seconds ?? 5);
const RULE = "status = 'published' || _owner_id = @auth.id";

const dir = mkdtempSync(join(tmpdir(), "baas-bench-rules-"));
const server = await startSource(dir, opt.database);
const call = apiCaller(server.url);

async function user(email: string): Promise<string> {
  return (await call("POST", "/auth/register", { email, password: "bench-password-1" }, "")).access_token;
}

let seed = 42;
const rand = () => ((seed = (seed * 1664525 + 1013904223) >>> 0), seed / 4294967296);
const record = () => ({ status: rand() < 0.5 ? "published" : "draft", category: `c${Math.floor(rand() * 20)}`, score: Math.round(rand() * 10000) / 100 });

try {
  const writer = await user("writer@example.com");
  const other = await user("other@example.com");
  const fields = [
    { name: "status", type: "text" },
    { name: "category", type: "text" },
    { name: "score", type: "number" },
  ];
  await call("POST", "/admin/collections", { name: "open", fields, rules: { read: "public", create: "authenticated" } });
  await call("POST", "/admin/collections", { name: "guarded", fields, rules: { read: RULE, create: "authenticated" } });
  for (const name of ["open", "guarded"]) await call("POST", `/admin/collections/${name}/indexes`, { fields: ["category", "score"] });
  await call("POST", "/admin/collections/guarded/indexes", { fields: ["status"] });
  for (let i = 0; i < RECORDS; i += 500) {
    const batch = Array.from({ length: Math.min(500, RECORDS - i) }, record);
    for (const name of ["open", "guarded"]) await call("POST", `/${name}/bulk`, batch, writer);
  }
  const lists = (name: string, token: string) =>
    Array.from({ length: 200 }, (_, i) => ({ method: "GET", path: `/api/v1/${name}?filter=category:eq:c${i % 20}&sort=-score&limit=50`, headers: { authorization: `Bearer ${token}` } }));
  const o = { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 };
  const rows: [string, Result, Result][] = [];
  for (const [who, token] of [
    ["the writer (owns every record)", writer],
    ["another user (owns none)", other],
  ] as const) {
    // Two rounds, alternating, so that a change in the machine's load meanwhile weighs on both alike.
    const runs: Result[][] = [[], []];
    for (let round = 0; round < 2; round++) {
      runs[0]!.push(await load(server.url, lists("open", token), o));
      runs[1]!.push(await load(server.url, lists("guarded", token), o));
    }
    const sum = (rs: Result[]): Result => ({
      requests: rs.reduce((n, r) => n + r.requests, 0),
      errors: rs.reduce((n, r) => n + r.errors, 0),
      firstError: rs.map((r) => r.firstError).find(Boolean) ?? "",
      rps: rs.reduce((n, r) => n + r.rps, 0) / rs.length,
      p50: Math.max(...rs.map((r) => r.p50)),
      p99: Math.max(...rs.map((r) => r.p99)),
    });
    rows.push([who, sum(runs[0]!), sum(runs[1]!)]);
  }
  const engine = opt.database ? "PostgreSQL" : "SQLite";
  console.log(`W3 (list 50 of ${RECORDS.toLocaleString("en")} with total, filter category, sort -score), ${engine}, concurrency 32, two alternating rounds of ${SECONDS} s each (mean req/s, worst p99):\n`);
  console.log("| Caller | `public` | `" + RULE + "` | Ratio | p99 public / rule (ms) | Errors |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const [who, a, b] of rows)
    console.log(`| ${who} | ${a.rps.toFixed(0)} req/s | ${b.rps.toFixed(0)} req/s | ${((b.rps / a.rps) * 100).toFixed(0)}% | ${a.p99.toFixed(1)} / ${b.p99.toFixed(1)} | ${a.errors + b.errors} |`);
} finally {
  server.proc.kill();
  await server.proc.exited;
  rmSync(dir, { recursive: true, force: true });
}
