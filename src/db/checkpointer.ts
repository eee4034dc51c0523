import { statSync } from "node:fs";
import type { Engine } from "./engine.ts";
import { rawDatabase, type SqliteEngine } from "./sqlite.ts";

// The worker's code, run from a blob so that the compiled executable needs no extra entry point.
// It opens its own connection and checkpoints in PASSIVE mode, which never waits for or blocks the
// server's readers and writers; the fsyncs of the WAL and the database file happen on its thread.
// Once the WAL holds restartFrames frames, a second pass copies what was written during the first and
// the server is asked for a moment without writes ({ quiet }); its answer ({ last }) starts the last pass,
// which copies the few frames left, so that the server's next write starts the WAL over ({ done }).
const WORKER = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
let asking = false;
const pass = () => {
  try { return db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch { return null; }
};
self.onmessage = (e) => {
  const m = e.data;
  if (m.start) {
    db = new Database(m.path);
    db.exec("PRAGMA busy_timeout = 1000");
    timer = setInterval(() => {
      if (asking) return;
      const r = pass();
      if (!r || r.log < m.restartFrames) return;
      // No frame written since the first pass and every one copied: no write goes on, and the next one
      // starts the WAL over by itself. (Every frame copied while a transaction was open is not enough: its
      // COMMIT appends to the WAL.)
      const again = pass();
      if (!again || (again.log === r.log && again.checkpointed >= again.log)) return;
      asking = true;
      self.postMessage({ quiet: true });
    }, m.everyMs);
  } else if (m.last) {
    pass();
    asking = false;
    self.postMessage({ done: true });
  } else if (m.stop) {
    if (timer) clearInterval(timer);
    try { db?.close(); } catch {}
    db = null;
    self.postMessage({ stopped: true });
  }
};`;

/**
 * Pages in the WAL before the serving connection checkpoints by itself, inside a commit (two fsyncs on the
 * event loop): only when the worker has not let the WAL start over by then (see RESTART_FRAMES), or does
 * not run. About 40 MB.
 */
const FALLBACK_PAGES = 10_000;

/**
 * Frames in the WAL from which the worker lets it start over. Under a steady stream of writes its passes
 * never catch up with the last frame, and a WAL starts over from its beginning only when every frame has
 * been copied; so from this size it asks the server for a moment without writes (SqliteEngine.pauseWrites),
 * long enough for one short pass. Each start-over costs the writes that pause (two fsyncs, on the worker's
 * thread) and the serving connection one fsync of the new WAL header, so they should be few: about 16 MB,
 * the size at which the serving connection checkpointed by itself before; FALLBACK_PAGES leaves room for
 * the writes of several passes.
 */
const RESTART_FRAMES = 4_000;

/** Longest a pause of the server's writes lasts when the worker does not answer (it always should). */
const PAUSE_LIMIT_MS = 1_000;

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
 * the copy and its fsyncs: the tail of single-create latency. Here a worker thread with its own
 * connection checkpoints every `everyMs` once the WAL has reached START_BYTES, lets the WAL start over
 * from RESTART_FRAMES on (the server's writes wait for its last short pass; nothing else does), and the
 * serving connection only checkpoints past FALLBACK_PAGES.
 */
export function startCheckpointer(
  db: Engine,
  path: string,
  opts: { everyMs?: number; restartFrames?: number; fallbackPages?: number } = {},
): Checkpointer {
  if (path === ":memory:") return { running: false, stop: async () => {} };
  const everyMs = opts.everyMs ?? 100;
  const restartFrames = opts.restartFrames ?? RESTART_FRAMES;
  rawDatabase(db).exec(`PRAGMA wal_autocheckpoint = ${opts.fallbackPages ?? FALLBACK_PAGES}`);
  const engine = db as SqliteEngine;
  let worker: Worker | null = null;
  let url = "";
  /** Ends the current pause of the server's writes, if any. */
  let endPause: (() => void) | null = null;
  let onStopped: (() => void) | null = null;
  const heard = (e: MessageEvent) => {
    const m = e.data as { quiet?: boolean; done?: boolean; stopped?: boolean };
    if (m.quiet) {
      void engine.pauseWrites(
        () =>
          new Promise<void>((resolve) => {
            const limit = setTimeout(() => endPause?.(), PAUSE_LIMIT_MS);
            endPause = () => {
              clearTimeout(limit);
              endPause = null;
              resolve();
            };
            if (worker && !onStopped) worker.postMessage({ last: true });
            else endPause();
          }),
      );
    } else if (m.done) endPause?.();
    else if (m.stopped) onStopped?.();
  };
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
    worker.onmessage = heard;
    worker.postMessage({ start: true, path, everyMs, restartFrames });
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
        onStopped = done;
        // Writes held for the worker's last pass go on now: the engine closes after them.
        endPause?.();
        w.postMessage({ stop: true });
      });
      return stopping;
    },
  };
}
