// Cold start of a baas binary: `bun bench/startup.ts [binary=dist/baas] [runs=10]`.
// Spawns `baas serve` on a fresh data directory (pinned to CPU 1 when taskset is there), polls
// /api/v1/health every 2 ms, and prints the milliseconds from spawn to the first answer of each run and
// their median. ../shared/bench's figure polls every 50 ms through curl, so it rounds up by up to ~60 ms.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.argv[2] ?? join(import.meta.dir, "../dist/baas");
const runs = Number(process.argv[3] ?? 10);
const pin = Bun.which("taskset") ? ["taskset", "-c", "1"] : [];
const times: number[] = [];
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync(join(tmpdir(), "baas-start-"));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const started = performance.now();
  const proc = Bun.spawn([...pin, bin, "serve", "--port", String(port), "--host", "127.0.0.1", "--data", dir], {
    env: { ...process.env, ADMIN_SECRET: "bench-admin-secret-0123456789" },
    stdout: "ignore",
    stderr: "ignore",
  });
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${bin} exited with ${proc.exitCode} before answering`);
    const up = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(() => true, () => false);
    if (up) break;
    await Bun.sleep(2);
  }
  times.push(performance.now() - started);
  proc.kill();
  await proc.exited;
  rmSync(dir, { recursive: true, force: true });
}
times.sort((a, b) => a - b);
console.log(`${bin}: ${times.map((t) => t.toFixed(0)).join(" ")} ms; median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms`);
