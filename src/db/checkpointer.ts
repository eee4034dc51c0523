import { statSync } from "node:fs";
import type { Engine } from "./engine.ts";
import { rawDatabase } from "./sqlite.ts";

// The worker's code, run from a blob so that the compiled executable needs no extra entry point.
// It opens its own connection and checkpoints in PASSIVE mode, which never waits for or blocks the
// server's readers and writers; the fsync of the database file happens on its thread.
const WORKER = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
self.onmessage = (e) => {
  const m = e.data;
  if (m.start) {
    db = new Database(m.path);
    db.exec("PRAGMA busy_timeout = 1000");
    const step = () => {
      try { db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch {}
    };
    timer = setInterval(step, m.everyMs);
  } else if (m.stop) {
    if (timer) clearInterval(timer);
    try { db?.close(); } catch {}
    db = null;
    self.postMessage({ stopped: true });
  }
};`;

/**
 * Pages in the WAL before the serving connection checkpoints by itself. Under a steady stream of writes
 * the worker's checkpoints never catch up with the last frame, so the WAL cannot start over from its
 * beginning; the serving connection's own checkpoint then copies only the few frames the worker has
 * not (their pages already synced by it) and lets the next write restart the WAL. About 16 MB.
 */
const FALLBACK_PAGES = 4_000;

/**
 * WAL size from which the worker runs. A worker is a second JavaScript VM (about 10 MiB of memory that
 * stays after it ends), so a server that writes little never starts one: until the WAL reaches this
 * size it stays far below FALLBACK_PAGES, and the serving connection never checkpoints inside a commit.
 */
const START_BYTES = 1024 * 1024;

export interface Checkpointer {
  /** True once the WAL has grown to START_BYTES and the worker runs. */
  readonly running: boolean;
  /** Stops the worker and closes its connection (before the server's own, so that one can remove the WAL). */
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the commit that
 * grows the WAL past 1,000 pages, so that one request (and every request queued behind it) waits for
 * the copy and its fsync: the tail of single-create latency. Here a worker thread with its own
 * connection checkpoints every `everyMs` once the WAL has reached START_BYTES, and the serving
 * connection only does so past FALLBACK_PAGES, when nearly everything is already copied.
 */
export function startCheckpointer(db: Engine, path: string, opts: { everyMs?: number } = {}): Checkpointer {
  if (path === ":memory:") return { running: false, stop: async () => {} };
  const everyMs = opts.everyMs ?? 100;
  rawDatabase(db).exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_PAGES}`);
  let worker: Worker | null = null;
  let url = "";
  // One stat of the WAL file per tick until the worker starts, then none.
  const watch = setInterval(() => {
    let size = 0;
    try {
      size = statSync(`${path}-wal`).size;
    } catch {
      return;
    }
    if (size < START_BYTES) return;
    clearInterval(watch);
    url = URL.createObjectURL(new Blob([WORKER], { type: "application/javascript" }));
    worker = new Worker(url);
    // It must not keep the process alive by itself (Bun's Worker has unref; the DOM type does not say so).
    (worker as unknown as { unref(): void }).unref();
    worker.postMessage({ start: true, path, everyMs });
  }, everyMs);
  watch.unref();
  let stopping: Promise<void> | null = null;
  return {
    get running() {
      return worker !== null;
    },
    stop() {
      clearInterval(watch);
      const w = worker;
      if (!w) return Promise.resolve();
      stopping ??= new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(giveUp);
          void w.terminate();
          URL.revokeObjectURL(url);
          resolve();
        };
        // A worker that does not answer (it never should) must not hold the shutdown.
        const giveUp = setTimeout(done, 2_000);
        w.onmessage = (e: MessageEvent) => {
          if ((e.data as { stopped?: boolean }).stopped) done();
        };
        w.postMessage({ stop: true });
      });
      return stopping;
    },
  };
}
