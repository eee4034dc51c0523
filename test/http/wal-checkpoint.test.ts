import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";
import { waitFor } from "../helpers/wait.ts";

// A running server checkpoints its WAL on a worker thread, not inside the commit of a request:
// under a stream of single creates the WAL stays small, and a stop still leaves no WAL behind.

// About SQLite's WAL file: the server it starts stores its data in SQLite whatever the test engine, so the
// PostgreSQL run leaves it out rather than run it twice.
describe.skipIf(onPostgres)("the WAL checkpoint worker", () => {
  let dir: string;
  let server: Running;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "baas-wal-"));
    server = await startServer(loadConfig({ data: dir, port: 0, host: "127.0.0.1" }, { ADMIN_SECRET }), { log: memoryLogger() });
    const res = await fetch(`${server.url}/api/v1/admin/collections`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "events", rules: { create: "public", read: "public" } }),
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the worker copies committed pages into the database file while the server idles; a stop removes the WAL", async () => {
    const db = join(dir, "baas.db");
    const wal = join(dir, "baas.db-wal");
    const before = statSync(db).size;
    const pad = "x".repeat(2000);
    // About 1,600 WAL frames: well below the serving connection's own checkpoint threshold (4,000),
    // so only the worker can move them into the database file.
    for (let i = 0; i < 400; i += 50) {
      const batch = Array.from({ length: 50 }, (_, j) =>
        fetch(`${server.url}/api/v1/events`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ n: i + j, pad }) }),
      );
      for (const res of await Promise.all(batch)) expect(res.status).toBe(201);
    }
    expect(statSync(wal).size).toBeGreaterThan(1024 * 1024);
    expect(statSync(wal).size).toBeLessThan(4000 * 4096);
    await waitFor(() => statSync(db).size > before + 512 * 1024, { what: "the checkpoint worker to fill the database file" });
    expect(await (await fetch(`${server.url}/api/v1/events/count`)).json()).toEqual({ total: 400 });
    await server.stop();
    await waitFor(() => !existsSync(wal), { what: "the WAL to be removed" });
    expect(readdirSync(dir).filter((f) => f.startsWith("baas.db"))).toEqual(["baas.db"]);
  });
});
