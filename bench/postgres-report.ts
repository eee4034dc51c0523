export {};
// The table of bench/postgres.sh: W1-W4 of baas on PostgreSQL, one node and two or three nodes (medians
// of the runs' summary.json files, in the shape run.sh of ../shared/bench writes), next to Parse
// Server 9 on PostgreSQL 15 measured with the same workload on the same kind of machine.
//
// usage: bun bench/postgres-report.ts [--one SUMMARY.json]... [--two SUMMARY.json]... [--three SUMMARY.json]...
const one: any[] = [];
const two: any[] = [];
const three: any[] = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) {
  const list = args[i] === "--one" ? one : args[i] === "--two" ? two : args[i] === "--three" ? three : null;
  if (!list || !args[i + 1]) throw new Error(`unexpected argument ${args[i]}`);
  list.push(await Bun.file(args[i + 1]).json());
}

const PARSE = { w1: 891, w2: 1096, w3: 684, w4: 2833 } as const;
const GOAL = 3;
const NAMES = {
  w1: "W1 create (req/s)",
  w2: "W2 get by id (req/s)",
  w3: "W3 list 50, n > 500, sort n desc, total (req/s)",
  w4: "W4 bulk insert, 500 per request (records/s)",
} as const;
type W = keyof typeof NAMES;

const median = (xs: number[]) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const k = (x: number) => (Number.isNaN(x) ? "-" : Math.round(x).toLocaleString("en-US"));
const rate = (s: any, w: W) => (w === "w4" ? s.w4?.records_per_s : s[w]?.rps);
const errors = (s: any, w: W) =>
  w === "w4" ? (s.w4?.failed_requests ?? 0) : Object.values((s[w]?.errors ?? {}) as Record<string, number>).reduce((a, b) => a + b, 0);

function cell(runs: any[], w: W): string[] {
  if (!runs.length) return ["not run", "", ""];
  const r = median(runs.map((s) => rate(s, w)));
  const errs = runs.reduce((a, s) => a + errors(s, w), 0);
  const p99 = w === "w4" ? median(runs.map((s) => s.w4?.chunk_ms_p99)) : median(runs.map((s) => s[w]?.latency_us?.p99 / 1000));
  const x = r / PARSE[w];
  return [
    `${k(r)}${errs ? ` (${k(errs)} errors)` : ""}`,
    Number.isNaN(p99) ? "-" : p99.toFixed(1),
    Number.isNaN(x) ? "-" : `${x.toFixed(1)}x${x >= GOAL ? "" : " (below 3x)"}`,
  ];
}

const groups = three.length ? ([[one, "1 node"], [two, "2 nodes"], [three, "3 nodes"]] as const) : ([[one, "1 node"], [two, "2 nodes"]] as const);
console.log(`| Workload | Parse 9, PG 15 | goal (3x) | ${groups.map(([, name]) => `baas, ${name} | p99 ms | vs Parse`).join(" | ")} |`);
console.log(`|---|---:|---:|${groups.map(() => "---:|---:|---:|").join("")}`);
for (const w of ["w1", "w2", "w3", "w4"] as W[]) {
  console.log(`| ${NAMES[w]} | ${k(PARSE[w])} | ${k(PARSE[w] * GOAL)} | ${groups.flatMap(([runs]) => cell([...runs], w)).join(" | ")} |`);
}
console.log(`\nMedians of ${one.length} one-node, ${two.length} two-node and ${three.length} three-node runs; W4 p99 is the slowest request of 500 records.`);
const cpu = (runs: any[], w: W) =>
  w === "w4"
    ? `${k(median(runs.map((s) => s.w4?.server_cpu_pct)))}`
    : `${k(median(runs.map((s) => s[w]?.server_cpu_pct)))}/${k(median(runs.map((s) => s[w]?.client_cpu_pct)))}`;
for (const [name, runs] of [
  ["1 node ", one],
  ["2 nodes", two],
  ["3 nodes", three],
] as const) {
  if (runs.length) console.log(`CPU busy %, server CPU/load CPU, ${name}: W1 ${cpu(runs, "w1")}  W2 ${cpu(runs, "w2")}  W3 ${cpu(runs, "w3")}  W4 ${cpu(runs, "w4")} (server)`);
}
const failed = [...one, ...two, ...three].some((s) => (["w1", "w2", "w3", "w4"] as W[]).some((w) => errors(s, w)));
process.exit(failed ? 1 : 0);
