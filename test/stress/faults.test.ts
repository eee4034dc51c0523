import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

describe("faults", () => {
  test("a full disk gives a clear 507 error, loses nothing written before, and writes resume when space returns", async () => {
    const t = createTestApp();
    cleanups.push(() => t.close());
    await t.admin("POST", "/api/v1/admin/collections", { name: "logs", rules: { create: "public" } });
    const first = await t.req("POST", "/api/v1/logs", { body: { line: "kept" } });
    expect(first.status).toBe(201);
    // Cap the database file at its current size plus a little: SQLite then answers SQLITE_FULL, as on a full disk.
    const pages = (t.sqlite.query("PRAGMA page_count").get() as { page_count: number }).page_count;
    t.sqlite.exec(`PRAGMA max_page_count = ${pages + 2}`);
    let full: { status: number; body: any } | null = null;
    for (let i = 0; i < 200 && !full; i++) {
      const res = await t.req("POST", "/api/v1/logs", { body: { line: "y".repeat(4000) } });
      if (res.status !== 201) full = res;
    }
    expect(full).not.toBeNull();
    expect(full!.status).toBe(507);
    expect(full!.body).toEqual({ error: expect.stringContaining("disk is full"), code: "storage_full" });
    // Reads still work and what was acknowledged is there.
    const list = await t.req("GET", "/api/v1/logs?limit=500");
    expect(list.status).toBe(200);
    expect(list.body.items[0].line).toBe("kept");
    expect(t.sqlite.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    t.sqlite.exec("PRAGMA max_page_count = 1073741823");
    expect((await t.req("POST", "/api/v1/logs", { body: { line: "again" } })).status).toBe(201);
  });

  test("a slow client and an oversized body do not stall other requests", async () => {
    const s: ServerProcess = await spawnServer();
    cleanups.push(() => s.cleanup());
    const healthRounds = async () => {
      const started = performance.now();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${s.url}/health`);
        expect(res.status).toBe(200);
      }
      return performance.now() - started;
    };
    // The baseline: 20 health checks on this machine now, with nothing else going on.
    const baseline = await healthRounds();
    // A client that promises a body and then sends almost nothing.
    const slow = connect(s.port, "127.0.0.1");
    await new Promise((r) => slow.once("connect", r));
    slow.write(
      "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"em",
    );
    // An oversized body in flight at the same time.
    const big = fetch(`${s.url}/api/v1/admin/collections`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "x".repeat(17 * 1024 * 1024) }),
    });
    // A server stalled by either would keep these waiting for its 30 s idle timeout, or for ever.
    expect(await healthRounds()).toBeLessThan(10 * baseline + 1_000);
    const bigRes = await big;
    expect(bigRes.status).toBe(413);
    expect(await bigRes.json()).toEqual({ error: expect.any(String), code: "payload_too_large" });
    slow.destroy();
  }, 30_000);
});
