import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCheckpointer, type Checkpointer } from "../../src/db/checkpointer.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { waitFor } from "../helpers/wait.ts";

// The checkpoint worker is a second JavaScript VM: a server that writes little never starts it; one
// whose WAL grows past 1 MiB does, and its checkpoints then fill the database file.
// About SQLite's WAL file only (the engine under test is SQLite whatever BAAS_TEST_ENGINE says).

let dir: string;
let engine: SqliteEngine;
let checkpointer: Checkpointer;
afterEach(async () => {
  await checkpointer.stop();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the checkpoint worker starts only once the WAL has grown past 1 MiB", async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-ckpt-"));
  const path = join(dir, "baas.db");
  engine = new SqliteEngine(openDatabase(path));
  checkpointer = startCheckpointer(engine, path, { everyMs: 5 });
  await engine.run("CREATE TABLE t (pad TEXT)");
  for (let i = 0; i < 20; i++) await engine.run("INSERT INTO t (pad) VALUES (?)", ["x".repeat(2000)]);
  // A check that something does NOT happen: many ticks of the watch go by with a small WAL.
  await Bun.sleep(100);
  expect(statSync(`${path}-wal`).size).toBeLessThan(1024 * 1024);
  expect(checkpointer.running).toBe(false);

  const before = statSync(path).size;
  for (let i = 0; i < 600; i++) await engine.run("INSERT INTO t (pad) VALUES (?)", ["x".repeat(2000)]);
  await waitFor(() => checkpointer.running, { what: "the checkpoint worker to start" });
  await waitFor(() => statSync(path).size > before + 512 * 1024, { what: "the worker's checkpoints to fill the database file" });
});

test("a stop before the worker ever started ends the watch at once", async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-ckpt-"));
  const path = join(dir, "baas.db");
  engine = new SqliteEngine(openDatabase(path));
  checkpointer = startCheckpointer(engine, path, { everyMs: 5 });
  await checkpointer.stop();
  expect(checkpointer.running).toBe(false);
});
