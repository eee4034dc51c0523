import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCheckpointer } from "../../src/db/checkpointer.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { waitFor } from "../helpers/wait.ts";

// A pause of the server's writes (the checkpoint worker's moment for its last pass) never outlives a stop
// or a close: writes waiting for it are committed, answered, and kept. About SQLite's engine only.

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), "baas-pausestop-"));
  const path = join(dir, "baas.db");
  return { dir, path, engine: new SqliteEngine(openDatabase(path)) };
}

const rowsIn = (path: string) => {
  const db = new Database(path);
  try {
    return (db.query("SELECT COUNT(*) AS n FROM t").get() as { n: number }).n;
  } finally {
    db.close();
  }
};

test("a close asked for during a pause waits for it; the transactions that waited commit before the close", async () => {
  const { dir, path, engine } = scratch();
  try {
    await engine.run("CREATE TABLE t (k TEXT PRIMARY KEY)");
    let end!: () => void;
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const pause = engine.pauseWrites(() => new Promise<void>((r) => ((end = r), holding())));
    await held;
    const writes = ["a", "b", "c"].map((k) => engine.transaction(() => engine.run("INSERT INTO t (k) VALUES (?)", [k])));
    let closed = false;
    const closing = engine.close().then(() => (closed = true));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    end();
    await pause;
    expect((await Promise.all(writes)).map((r) => r.changes)).toEqual([1, 1, 1]);
    await closing;
    expect(rowsIn(path)).toBe(3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a stop of the checkpointer amid steady writes and pauses: every write answered and kept, the stop and close end", async () => {
  const { dir, path, engine } = scratch();
  let pauses = 0;
  const pauseWrites = engine.pauseWrites.bind(engine);
  engine.pauseWrites = (during) => (pauses++, pauseWrites(during));
  const checkpointer = startCheckpointer(engine, path, { everyMs: 2, restartFrames: 32, fallbackPages: 10_000 });
  let stopWriting = false;
  try {
    await engine.run("CREATE TABLE t (pad TEXT)");
    const row = "x".repeat(2000);
    let answered = 0;
    const writer = async () => {
      while (!stopWriting) {
        await engine.transaction(() => engine.run("INSERT INTO t (pad) VALUES (?)", [row]));
        answered++;
        await Bun.sleep(0);
      }
    };
    const writers = [writer(), writer(), writer()];
    await waitFor(() => checkpointer.running && pauses >= 3, { timeoutMs: 30_000, what: "the worker to pause writes three times" });
    await checkpointer.stop();
    // Writes go on after the stop: nothing holds them any more.
    const after = answered;
    await waitFor(() => answered >= after + 50, { what: "writes after the stop" });
    stopWriting = true;
    await Promise.all(writers);
    await engine.close();
    expect(rowsIn(path)).toBe(answered);
  } finally {
    stopWriting = true;
    await checkpointer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
