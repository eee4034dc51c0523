// `bun bench/webhooks.ts [--no-build] [--rounds N] [--seconds S]`: W1 (single creates, concurrency 32) on
// dist/baas without a webhook and with one webhook subscribed to the collection, alternating for N rounds
// (default 3), each on a fresh data dir. The receiver is a separate process answering 204 at once; it and the
// load generator share CPU 0, the server gets CPU 1 (when taskset exists). Reports creates/s, p99, server CPU
// per create, and for the webhook runs the deliveries received during the load and the time the outbox took to
// drain after it. Writes the "Webhooks" section of bench/RESULTS.md.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, load, startProc, type Result } from "./harness.ts";

if (process.argv[2] === "receiver") {
  // The webhook receiver: counts the POSTs, answers 204; GET answers the count.
  let got = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      if (req.method === "GET") return new Response(String(got));
      await req.arrayBuffer();
      got++;
      return new Response(null, { status: 204 });
    },
  });
  console.error(`listening on http://127.0.0.1:${server.port}`);
} else {
  await main();
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name: string, d: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) || d : d);
  const ROUNDS = opt("--rounds", 3);
  const SECONDS = opt("--seconds", 5);
  const taskset = Bun.which("taskset");
  const on = (cpu: number) => (cmd: string[]) => (taskset && cpus().length > 1 ? [taskset, "-c", String(cpu), ...cmd] : cmd);

  if (!args.includes("--no-build")) {
    const b = Bun.spawnSync(["npm", "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (b.exitCode !== 0) throw new Error("build failed");
  }

  let seed = 11;
  const rnd = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296;
  const creates = Array.from({ length: 2000 }, () => ({
    method: "POST",
    path: "/api/v1/items",
    body: JSON.stringify({ title: `item ${Math.floor(rnd() * 1e6)}`, category: `c${Math.floor(rnd() * 20)}`, score: Math.round(rnd() * 10000) / 100 }),
  }));

  const cpuSeconds = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  };

  type Run = Result & { cpu: number; received?: number; drainMs?: number; delivered?: number };

  async function run(withWebhook: boolean): Promise<Run> {
    const dir = mkdtempSync(join(tmpdir(), "baas-bench-webhooks-"));
    const srv = await startProc(on(1)([BIN, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dir]), dir, { ADMIN_SECRET: SECRET });
    const receiver = withWebhook ? await startProc(on(0)([process.execPath, import.meta.path, "receiver"]), dir) : null;
    try {
      const h = { "content-type": "application/json", authorization: `Bearer ${SECRET}` };
      const admin = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${srv.url}/api/v1${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
        if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
        return (await res.json()) as any;
      };
      await admin("POST", "/admin/collections", { name: "items", rules: { read: "public", create: "public" } });
      const hook = receiver ? await admin("POST", "/admin/webhooks", { url: `${receiver.url}/hook`, collections: ["items"] }) : null;
      // The first create fixes the field types (and, with a webhook, its first delivery opens the connection).
      await fetch(`${srv.url}/api/v1/items`, { method: "POST", headers: h, body: creates[0]!.body });
      const count = async () => (receiver ? Number(await (await fetch(`${receiver.url}/`)).text()) : 0);
      const before = await count();
      const c0 = cpuSeconds(srv.proc.pid);
      const r = await load(srv.url, creates, { concurrency: 32, durationMs: SECONDS * 1000, warmupMs: 500 }, on(0));
      const cpu = cpuSeconds(srv.proc.pid) - c0;
      if (!hook) return { ...r, cpu };
      const received = (await count()) - before;
      // How long the outbox takes to empty once the writes stop.
      const t0 = performance.now();
      while ((await admin("GET", `/admin/webhooks/${hook.id}`)).pending > 0) {
        if (performance.now() - t0 > 300_000) throw new Error("the outbox did not drain in 5 minutes");
        await Bun.sleep(50);
      }
      return { ...r, cpu, received, drainMs: performance.now() - t0, delivered: (await count()) - before };
    } finally {
      for (const p of [srv, receiver]) {
        if (!p) continue;
        p.proc.kill();
        await p.proc.exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const without: Run[] = [];
  const withOne: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const w of [false, true]) {
      const r = await run(w);
      (w ? withOne : without).push(r);
      process.stderr.write(
        `round ${round + 1} ${w ? "one webhook" : "no webhook"}: ${r.rps.toFixed(0)} creates/s, p99 ${r.p99.toFixed(1)} ms, ${(r.requests / r.cpu).toFixed(0)} per CPU-s` +
          (w ? `, ${r.received} delivered during the load, drained in ${(r.drainMs! / 1000).toFixed(1)} s` : "") +
          ` (${r.errors} errors ${r.firstError})\n`,
      );
    }
  }

  const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  const best = (xs: Run[]) => xs.reduce((a, b) => (b.rps > a.rps ? b : a));
  const perCpu = (xs: Run[]) => xs.reduce((n, x) => n + x.requests, 0) / xs.reduce((n, x) => n + x.cpu, 0);
  const b0 = best(without);
  const b1 = best(withOne);
  const lines = [
    "## Webhooks: W1 with one webhook subscribed (bench/webhooks.ts)",
    "",
    `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), Bun ${Bun.version}, load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")} at the end. ` +
      `Best of ${ROUNDS} alternating rounds per side, each on a fresh data dir; single creates at concurrency 32 for ${SECONDS} s. ` +
      `${taskset ? "Server on CPU 1; load generator and receiver (a separate process answering 204) on CPU 0." : "No taskset: processes share the cores."}`,
    "",
    "| Run | creates/s | p50 ms | p99 ms | per server CPU-s | delivered during the load | outbox drained after | errors |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    `| no webhook | ${fmt(b0.rps)} | ${fmt(b0.p50, 1)} | ${fmt(b0.p99, 1)} | ${fmt(perCpu(without))} | | | ${without.reduce((n, x) => n + x.errors, 0)} |`,
    `| one webhook on the collection | ${fmt(b1.rps)} | ${fmt(b1.p50, 1)} | ${fmt(b1.p99, 1)} | ${fmt(perCpu(withOne))} | ${fmt(b1.received!)} | ${fmt(b1.drainMs! / 1000, 1)} s | ${withOne.reduce((n, x) => n + x.errors, 0)} |`,
    "",
    `With one webhook: ${fmt((b1.rps / b0.rps) * 100)}% of the creates/s without (target ≥ 80%), ${fmt((perCpu(withOne) / perCpu(without)) * 100)}% per server CPU-second ` +
      "(the server's CPU also sends every delivery: the outbox row is written in the create's transaction, the POST and its attempt record come after).",
    "",
  ];
  const section = lines.join("\n");
  process.stdout.write(section + "\n");

  const file = join(ROOT, "bench/RESULTS.md");
  const BEGIN = "<!-- webhooks:begin -->";
  const END = "<!-- webhooks:end -->";
  let text = readFileSync(file, "utf8");
  const block = `${BEGIN}\n${section}${END}\n`;
  if (text.includes(BEGIN) && text.includes(END)) text = text.slice(0, text.indexOf(BEGIN)) + block + text.slice(text.indexOf(END) + END.length + 1);
  else text = `${text}${text.endsWith("\n") ? "" : "\n"}\n${block}`;
  writeFileSync(file, text);
  process.exit(0);
}
