import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// Enabling full-text search on a large collection builds the index in steps: the server keeps
// answering meanwhile, and GET …/fts shows the build going.
// SQLite only: PostgreSQL's index is a generated column, complete when enabling answers, with no
// build in steps to watch or resume (test/http/fts-postgres.test.ts checks it is "ready" at once).

const RECORDS = 100_000;
const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };
let srv: ServerProcess;
let dir: string;

beforeAll(async () => {
  if (onPostgres) return;
  const seed = createTestApp();
  dir = seed.dir;
  await seed.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "public" } });
  for (let i = 0; i < RECORDS; i += 500) {
    const batch = Array.from({ length: 500 }, (_, k) => ({ title: `note ${i + k}`, body: `walrus number ${i + k} sings in the harbour` }));
    const res = await seed.admin("POST", "/api/v1/notes/bulk", batch);
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${res.text}`);
  }
  seed.sqlite.close();
  srv = await spawnServer({ dir });
}, 300_000);

afterAll(async () => {
  await srv?.stop();
  const { rmSync } = await import("node:fs");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function timed(path: string, init?: RequestInit): Promise<{ ms: number; status: number; body: any }> {
  const t0 = performance.now();
  const res = await fetch(srv.url + path, init);
  const body = await res.json();
  return { ms: performance.now() - t0, status: res.status, body };
}

describe.skipIf(onPostgres)("building a full-text index", () => {
  test("while 100k records are indexed, /health stays fast, GET …/fts reports progress, and search answers", async () => {
    const enable = timed("/api/v1/admin/collections/notes/fts", { method: "POST", headers: admin });
    let finished = false;
    enable.finally(() => (finished = true));
    const health: number[] = [];
    const seen: any[] = [];
    let searchedDuringBuild: { status: number; body: any } | null = null;
    const deadline = Date.now() + 120_000;
    while (!finished && Date.now() < deadline) {
      const h = await timed("/health");
      expect(h.status).toBe(200);
      health.push(h.ms);
      const s = await timed("/api/v1/admin/collections/notes/fts", { headers: admin });
      expect(s.status).toBe(200);
      seen.push(s.body);
      if (s.body.state === "building" && !searchedDuringBuild) searchedDuringBuild = await timed("/api/v1/notes?search=walrus&limit=1");
    }
    const done = await enable;
    expect(done.status).toBe(201);
    expect(done.body).toEqual({ enabled: true, fields: ["title", "body"], indexed_records: RECORDS, state: "ready" });

    // Progress was visible: at least one answer while building, with part of the records indexed.
    const partial = seen.filter((b) => b.state === "building" && b.indexed_records > 0 && b.indexed_records < RECORDS);
    expect(partial.length).toBeGreaterThan(0);
    const counts = seen.filter((b) => b.state === "building").map((b) => b.indexed_records);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    // Searching during a build answers from what is indexed so far, never an error.
    expect(searchedDuringBuild?.status).toBe(200);
    expect(searchedDuringBuild?.body.items.length).toBeLessThanOrEqual(1);
    // The server was never stopped by the build: every /health answered well under the build's time
    // (a build in one step would hold one of them for all of it), measured against the build on this
    // machine rather than in milliseconds a busy one exceeds.
    expect(health.length).toBeGreaterThan(2);
    expect(Math.max(...health)).toBeLessThan(done.ms / 3);

    const after = await timed("/api/v1/notes?search=walrus&limit=1&total=true");
    expect(after.body.total).toBe(RECORDS);
    expect((await timed("/api/v1/admin/collections/notes/fts", { headers: admin })).body.state).toBe("ready");
  }, 180_000);

  test("a server killed mid-build resumes the build when it starts again", async () => {
    const seed = createTestApp();
    const own = seed.dir;
    await seed.admin("POST", "/api/v1/admin/collections", { name: "logs", rules: { read: "public" } });
    for (let i = 0; i < RECORDS; i += 500) {
      const res = await seed.admin("POST", "/api/v1/logs/bulk", Array.from({ length: 500 }, (_, k) => ({ line: `otter ${i + k}` })));
      if (res.status !== 201) throw new Error(`seed failed: ${res.status}`);
    }
    seed.sqlite.close();
    const first = await spawnServer({ dir: own });
    let second: ServerProcess | null = null;
    try {
      const status = async (s: ServerProcess) =>
        (await (await fetch(`${s.url}/api/v1/admin/collections/logs/fts`, { headers: admin })).json()) as { enabled?: boolean; fields?: string[]; state: string; indexed_records: number };
      void fetch(`${first.url}/api/v1/admin/collections/logs/fts`, { method: "POST", headers: admin }).catch(() => {});
      let seen = { state: "", indexed_records: 0 };
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && !(seen.state === "building" && seen.indexed_records > 0)) seen = await status(first);
      if (seen.state !== "building") throw new Error(`the build ended before it could be interrupted: ${JSON.stringify(seen)}`);
      await first.kill9();
      second = await spawnServer({ dir: own });
      let now = await status(second);
      while (Date.now() < deadline && now.state !== "ready") now = await status(second);
      expect(now).toEqual({ enabled: true, fields: ["line"], indexed_records: RECORDS, state: "ready" });
      const found = await (await fetch(`${second.url}/api/v1/logs?search=otter&limit=1`)).json();
      expect(found.total).toBe(RECORDS);
    } finally {
      await first.cleanup();
      await second?.cleanup();
      const { rmSync } = await import("node:fs");
      rmSync(own, { recursive: true, force: true });
    }
  }, 180_000);
});
