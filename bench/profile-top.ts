// Reads a `.cpuprofile` (bun --cpu-prof) and prints the functions with the largest share of samples,
// by self time and by inclusive time (a function and everything it calls).
//
//   bun bench/profile-top.ts <file.cpuprofile> [--window=start,end] [rows] [name ...]
// `--window` keeps only the samples taken between two epoch-microsecond times (bench/overhead.ts prints
// the window of each workload loop, so the seeding does not count). Names given after the row count are
// always printed (their inclusive share), even when not in the top rows.
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const args = process.argv.slice(2);
const win = args.find((a) => a.startsWith("--window="))?.slice("--window=".length).split(",").map(Number);
const [file, rowsArg, ...wanted] = args.filter((a) => !a.startsWith("--window="));
const prof = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[]; startTime: number; timeDeltas: number[] };
const rows = Number(rowsArg ?? 25);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: Node) => `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;

let t = prof.startTime;
const times = prof.timeDeltas.map((d) => (t += d));
const samples = win ? prof.samples.filter((_, i) => times[i] >= win[0] && times[i] <= win[1]) : prof.samples;
const self = new Map<string, number>();
const incl = new Map<string, number>();
for (const s of samples) {
  const n = byId.get(s)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let id: number | undefined = s; id !== undefined; id = parent.get(id)) {
    const l = label(byId.get(id)!);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + 1);
  }
}
const total = samples.length;
const pct = (v: number) => `${((100 * v) / total).toFixed(1)}%`.padStart(6);
const print = (title: string, m: Map<string, number>) => {
  console.log(`${title} (${total} samples)`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${pct(v)}  ${k}`);
};
print("self", self);
print("inclusive", incl);
if (wanted.length) {
  console.log("inclusive share of named functions");
  for (const w of wanted) {
    let v = 0;
    for (const [k, n] of incl) if (k.startsWith(`${w} `)) v = Math.max(v, n);
    console.log(`${pct(v)}  ${w}`);
  }
}
