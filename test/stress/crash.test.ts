import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.cleanup();
});

const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };

describe("crash safety", () => {
  test("kill -9 during concurrent writes loses no acknowledged record and leaves the database intact", async () => {
    const s = await spawnServer();
    servers.push(s);
    const created = await fetch(`${s.url}/api/v1/admin/collections`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ name: "events", rules: { create: "public" } }),
    });
    expect(created.status).toBe(201);

    const acked: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop && i < 2000; i++) {
        try {
          const res = await fetch(`${s.url}/api/v1/events`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ writer: w, seq: i, payload: "x".repeat(200) }),
          });
          if (res.status === 201) acked.push(((await res.json()) as { _id: string })._id);
        } catch {
          return; // the server died mid-request: that write was never acknowledged
        }
      }
    };
    const writers = Array.from({ length: 16 }, (_, w) => writer(w));
    await waitFor(() => acked.length >= 300, { what: "300 acknowledged writes", progress: () => acked.length });
    await s.kill9();
    stop = true;
    await Promise.all(writers);
    expect(acked.length).toBeGreaterThanOrEqual(300);

    const db = new Database(join(s.dir, "baas.db"));
    expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();

    const again = await spawnServer({ dir: s.dir });
    servers.push(again);
    const ids = new Set<string>();
    let after = "";
    for (;;) {
      const page = (await (await fetch(`${again.url}/api/v1/events?limit=500${after ? `&after=${after}` : ""}`)).json()) as {
        items: { _id: string }[];
        next_cursor: string | null;
      };
      for (const r of page.items) ids.add(r._id);
      if (!page.next_cursor) break;
      after = page.next_cursor;
    }
    const lost = acked.filter((id) => !ids.has(id));
    expect(lost).toEqual([]);
    await again.stop();
  }, 60_000);
});
