import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import type { Engine } from "../../src/db/engine.ts";
import { migrate } from "../../src/db/migrate.ts";
import { openDatabase } from "../../src/db/open.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { lazyPostgres, onPostgres } from "../helpers/engine.ts";
import { waitFor } from "../helpers/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "baas-start-"));
let running: Running | null = null;
afterAll(async () => {
  await running?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A port no one listens on now. */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

test("until the start-up ends (admin secret, …) the server answers every request 503 unavailable, then serves", async () => {
  const config = loadConfig({ data: dir, port: freePort(), host: "127.0.0.1" }, { ADMIN_SECRET });
  let inner: Engine;
  if (onPostgres) inner = lazyPostgres().engine;
  else {
    const sqlite = openDatabase(config.dbPath);
    migrate(sqlite);
    inner = new SqliteEngine(sqlite);
  }
  // The engine holds the start-up's first look at the admin secret until the test lets it go, as a slow
  // database (a PostgreSQL across the network) would.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let reached = false;
  const engine = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (key !== "get") return typeof value === "function" ? value.bind(target) : value;
      return async (sql: string, params?: unknown[]) => {
        if (/_meta/.test(sql) && params?.[0] === "admin_secret_hash" && !reached) {
          reached = true;
          await held;
        }
        return (value as Engine["get"]).call(target, sql, params as never);
      };
    },
  });
  const log = memoryLogger();
  const started = startServer(config, { engine, log });
  await waitFor(() => reached, { what: "the start-up to ask for the admin secret" });
  const url = `http://127.0.0.1:${config.port}`;
  // Listening, but not started: health and every other route answer 503, with Retry-After.
  for (const [path, headers] of [
    ["/health", {}],
    ["/ready", {}],
    ["/api/v1/admin/collections", { authorization: `Bearer ${ADMIN_SECRET}` }],
    ["/api/v1/nope", {}],
  ] as const) {
    const res = await fetch(`${url}${path}`, { headers });
    expect([path, res.status, res.headers.get("retry-after"), await res.json()]).toEqual([path, 503, "1", { error: "the server is starting", code: "unavailable", reason: "starting" }]);
  }
  // Those answers are not logged: the request log starts after the start-up lines.
  expect(log.lines.filter((l) => l.msg === "request")).toEqual([]);
  release();
  running = await started;
  expect((await fetch(`${url}/health`)).status).toBe(200);
  expect((await fetch(`${url}/ready`)).status).toBe(200);
  expect((await fetch(`${url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${ADMIN_SECRET}` } })).status).toBe(200);
  expect(log.lines.filter((l) => l.msg === "request").map((l) => [l.fields?.path, l.fields?.status])).toEqual([
    ["/health", 200],
    ["/ready", 200],
    ["/api/v1/admin/collections", 200],
  ]);
});
