import { statSync } from "node:fs";
import type { Engine } from "./engine.ts";
import { rawDatabase, SqliteEngine } from "./sqlite.ts";

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
      let r = pass();
      if (!r || r.log < m.restartFrames) return;
      // More passes, each copying what was written during the one before, until one finds few new frames:
      // the last pass, which the server's writes wait for, copies (and syncs) about as many.
      for (let i = 0; i < m.maxPasses; i++) {
        const again = pass();
        // The WAL started over meanwhile, or no frame was written since the pass before and every one is
        // copied: no write goes on, and the next one starts the WAL over by itself. (Every frame copied while
        // a transaction was open is not enough: its COMMIT appends to the WAL.)
        if (!again || again.log < r.log || (again.log === r.log && again.checkpointed >= again.log)) return;
        const written = again.log - r.log;
        r = again;
        if (written <= m.fewFrames) break;
      }
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
 * not run. 128 MB with the 8 KiB pages of new database files.
 */
const FALLBACK_PAGES = 16_000;

/**
 * Frames in the WAL from which the worker lets it start over (64 MB with 8 KiB pages). Under a steady stream
 * of writes its passes never catch up with the last frame, and a WAL starts over from its beginning only when
 * every frame has been copied; so from this size it asks the server for a moment without writes
 * (SqliteEngine.pauseWrites), long enough for one short pass. Each such pause holds every create in flight
 * then, so their share of all creates is about (creates in flight × frames per create) / RESTART_FRAMES:
 * with the bench's 32 connections and about one frame per grouped create, 0.9% at 4,000 frames, which put
 * the pauses (5–20 ms on a virtual disk) right at W1's p99; 0.4% at 8,000. FALLBACK_PAGES leaves room for
 * the writes of several passes.
 */
const RESTART_FRAMES = 8_000;

/**
 * Before asking for a moment without writes the worker passes again (at most MAX_PASSES times) until a pass
 * finds at most FEW_FRAMES frames written while the one before ran. The last pass, which the writes wait
 * for, copies about that many: its time is mostly the two fsyncs of what it copied (about 6 ms for 100
 * frames of 8 KiB on a virtual disk), so the fewer the shorter the pause.
 */
const MAX_PASSES = 6;
const FEW_FRAMES = 32;

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
 * serving connection only checkpoints past FALLBACK_PAGES. An engine without a WAL file (PostgreSQL, an
 * in-memory database) gets one that does not run.
 */
export function startCheckpointer(
  db: Engine,
  path: string,
  opts: { everyMs?: number; restartFrames?: number; fallbackPages?: number } = {},
): Checkpointer {
  if (path === ":memory:" || !(db instanceof SqliteEngine)) return { running: false, stop: async () => {} };
  const everyMs = opts.everyMs ?? 100;
  const restartFrames = opts.restartFrames ?? RESTART_FRAMES;
  rawDatabase(db).exec(`PRAGMA wal_autocheckpoint = ${opts.fallbackPages ?? FALLBACK_PAGES}`);
  const engine = db;
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
    worker.postMessage({ start: true, path, everyMs, restartFrames, maxPasses: MAX_PASSES, fewFrames: FEW_FRAMES });
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
