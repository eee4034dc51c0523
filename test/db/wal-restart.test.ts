import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCheckpointer } from "../../src/db/checkpointer.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { waitFor } from "../helpers/wait.ts";

// Under a steady stream of writes the checkpoint worker's passes never catch up with the last frame, and a
// WAL starts over only once every frame is copied: the worker gets a moment without writes for its last
// pass, so the WAL starts over long before the serving connection's own checkpoint (inside a commit, on
// the event loop) would. About SQLite's WAL file only (whatever BAAS_TEST_ENGINE says).

test("under steady writes the WAL starts over from the worker's checkpoints, not the serving connection's", async () => {
  const dir = mkdtempSync(join(tmpdir(), "baas-walrestart-"));
  const path = join(dir, "baas.db");
  const engine = new SqliteEngine(openDatabase(path));
  // The serving connection's own checkpoint out of reach (40 MB): only the worker can keep the WAL small.
  const checkpointer = startCheckpointer(engine, path, { everyMs: 5, restartFrames: 64, fallbackPages: 10_000 });
  try {
    await engine.run("CREATE TABLE t (pad TEXT)");
    const row = "x".repeat(2000);
    const write = async (rows: number) => {
      for (let i = 0; i < rows; i += 20) {
        await engine.transaction(async () => {
          for (let j = 0; j < 20; j++) await engine.run("INSERT INTO t (pad) VALUES (?)", [row]);
        });
        // A server's writes come from requests, between which its event loop turns (and, on a busy machine,
        // the worker thread gets its share of the CPU: a pace, not a wait for something).
        await Bun.sleep(1);
      }
    };
    const before = statSync(path).size;
    await write(600);
    await waitFor(() => checkpointer.running, { what: "the checkpoint worker to start" });
    // Only the worker checkpoints (the serving connection's threshold is out of reach): its first pass.
    await waitFor(() => statSync(path).size > before + 512 * 1024, { what: "the worker's first checkpoint" });
    // About 12 MB more: a WAL that never started over would hold all of it. Where it started over, its file
    // keeps the longest stretch between two starts: 1.5-2.7 MB here, up to 6 MB while the suites on both
    // engines and a browser share two cores (the worker waits its turn for the CPU).
    await write(6_000);
    expect(statSync(`${path}-wal`).size).toBeLessThan(8 * 1024 * 1024);
    expect(await engine.get("SELECT COUNT(*) AS n FROM t")).toEqual({ n: 6_600 });
  } finally {
    await checkpointer.stop();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
