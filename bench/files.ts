// Files benchmark (CONTRACT §14): upload and download throughput of 1 MiB files with 32 connections, baas
// against the bare Bun.serve + Bun.file ceiling (bench/files-ceiling.ts) in the same run (uploads also against
// its bare write of a multipart body's pieces, `upload_vs_pieces`), and the server's RSS
// while one 500 MiB file is uploaded. `bun bench/files.ts` (env DURATION=seconds per phase, default 8;
// BAAS_CMD="bun cli/index.ts" to run from source instead of dist/baas).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, SECRET, startProc, type Proc } from "./harness.ts";

const DURATION = Number(process.env.DURATION ?? 8) * 1000;
const CONCURRENCY = 32;
const MIB = 1024 * 1024;
const admin = { authorization: `Bearer ${SECRET}` };
const file = new Uint8Array(MIB).map((_, i) => (i * 2654435761) >>> 24);
const boundary = "benchboundary0123456789";
const multipart = Buffer.concat([
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="doc"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
  file,
  Buffer.from(`\r\n--${boundary}--\r\n`),
]);

/** Runs `op` on CONCURRENCY workers for DURATION ms; answers MiB/s and requests/s. */
async function drive(op: (i: number) => Promise<boolean>): Promise<{ mibps: number; rps: number; ok: number; errors: number }> {
  const end = performance.now() + DURATION;
  const start = performance.now();
  let ok = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      let i = w;
      while (performance.now() < end) {
        if (await op(i).catch(() => false)) ok++;
        else errors++;
        i += CONCURRENCY;
      }
    }),
  );
  const s = (performance.now() - start) / 1000;
  return { mibps: ok / s, rps: ok / s, ok, errors };
}

/**
 * Waits until the files written so far are on disk: the phase after one that wrote gigabytes would otherwise pay for
 * the kernel's write-back of them (writers are throttled while dirty pages are many), which is not its own cost.
 */
function settleDisk(): void {
  Bun.spawnSync(["sync"]);
}

/** CPU seconds (user + system) a process has used so far (/proc/<pid>/stat, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** `drive`, with the server's CPU time per request (µs) over the run. */
async function driveMeasured(pid: number, op: (i: number) => Promise<boolean>) {
  const before = cpuSeconds(pid);
  const r = await drive(op);
  return { ...r, cpuUs: ((cpuSeconds(pid) - before) / Math.max(1, r.ok)) * 1e6 };
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function startBaas(dir: string): Promise<Proc> {
  mkdirSync(dir, { recursive: true });
  const cmd = process.env.BAAS_CMD ? [...process.env.BAAS_CMD.split(" "), "serve"] : [BIN, "serve"];
  const p = await startProc([...cmd, "--port", "0", "--host", "127.0.0.1", "--data", dir], dir, { ADMIN_SECRET: SECRET, LOG_LEVEL: "warn" });
  const made = await fetch(`${p.url}/api/v1/admin/collections`, {
    method: "POST",
    headers: { ...admin, "content-type": "application/json" },
    body: JSON.stringify({ name: "docs", rules: { read: "public", create: "public" }, fields: [{ name: "doc", type: "file", max_size: 600 * MIB }] }),
  });
  if (made.status !== 201) throw new Error(`collection: ${made.status} ${await made.text()}`);
  return p;
}

/** Streams one 500 MiB file to `baas` and samples its RSS meanwhile (MiB). */
async function bigUpload(baas: Proc) {
  settleDisk();
  const pid = baas.proc.pid;
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50);
  let sent = 0;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="doc"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
    },
    pull(c) {
      if (sent >= 500 * MIB) {
        c.enqueue(tail);
        return c.close();
      }
      sent += MIB;
      c.enqueue(file);
    },
  });
  const t0 = performance.now();
  // @ts-expect-error duplex: Bun streams a request body
  const big = await fetch(`${baas.url}/api/v1/docs`, { method: "POST", body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, duplex: "half" });
  const secs = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const after = rssMiB(pid);
  return { status: big.status, seconds: +secs.toFixed(2), mibps: +(500 / secs).toFixed(0), rss_before: +before.toFixed(0), rss_peak: +peak.toFixed(0), rss_after: +after.toFixed(0) };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "baas-bench-files-"));
  const results: Record<string, unknown> = {};
  try {
    // The bare write of a multipart body's pieces, in a ceiling process and folder of its own (the phase after one
    // that wrote gigabytes would pay for their pages).
    const bare = await startProc([process.execPath, join(ROOT, "bench/files-ceiling.ts"), join(dir, "pieces")], dir);
    settleDisk();
    const cPieces = await driveMeasured(bare.proc.pid, async () => {
      const r = await fetch(`${bare.url}/upload-pieces`, { method: "POST", body: multipart, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
      return r.status === 201;
    });
    bare.proc.kill();
    rmSync(join(dir, "pieces"), { recursive: true, force: true });
    // Ceiling.
    const ceiling = await startProc([process.execPath, join(ROOT, "bench/files-ceiling.ts"), join(dir, "ceiling")], dir);
    settleDisk();
    const cUp = await driveMeasured(ceiling.proc.pid, async () => (await fetch(`${ceiling.url}/upload`, { method: "POST", body: file })).status === 201);
    const cDown = await driveMeasured(ceiling.proc.pid, async (i) => {
      const r = await fetch(`${ceiling.url}/file/f${(i % 64) + 1}`);
      return r.status === 200 && (await r.arrayBuffer()).byteLength === MIB;
    });
    ceiling.proc.kill();
    rmSync(join(dir, "ceiling"), { recursive: true, force: true });
    settleDisk();
    // baas.
    const baas = await startBaas(join(dir, "baas"));
    const ids: [string, string][] = [];
    const up = await driveMeasured(baas.proc.pid, async () => {
      const r = await fetch(`${baas.url}/api/v1/docs`, { method: "POST", body: multipart, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
      if (r.status !== 201) return false;
      const rec = await r.json();
      if (ids.length < 64) ids.push([rec._id, rec.doc]);
      return true;
    });
    const down = await driveMeasured(baas.proc.pid, async (i) => {
      const [id, name] = ids[i % ids.length]!;
      const r = await fetch(`${baas.url}/api/v1/files/docs/${id}/${name}`);
      return r.status === 200 && (await r.arrayBuffer()).byteLength === MIB;
    });
    // RSS while one 500 MiB file streams in: on this server after the phases above, and on a fresh one (the first
    // shows what the phases left, the second the upload alone).
    results.big_after_phases = await bigUpload(baas);
    baas.proc.kill();
    const fresh = await startBaas(join(dir, "fresh"));
    results.big = await bigUpload(fresh);
    fresh.proc.kill();
    const figures = (b: typeof up, c: typeof up) => ({
      baas_mibps: +b.mibps.toFixed(0),
      ceiling_mibps: +c.mibps.toFixed(0),
      ratio: `${Math.round((b.mibps / c.mibps) * 100)}%`,
      server_cpu_us_per_file: { baas: Math.round(b.cpuUs), ceiling: Math.round(c.cpuUs) },
      errors: b.errors + c.errors,
    });
    results.upload = figures(up, cUp);
    // Against the bare server that writes the multipart body's pieces as they come (no Bun.write of the request).
    results.upload_vs_pieces = figures(up, cPieces);
    results.download = figures(down, cDown);
    console.log(JSON.stringify(results, null, 2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
