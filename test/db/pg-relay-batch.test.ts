import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN } from "../../src/principal.ts";
import { createCollection } from "../../src/collections/admin.ts";
import { loadConfig } from "../../src/config.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { type AppContext } from "../../src/context.ts";
import type { SqlValue } from "../../src/db/engine.ts";
import { openPostgres, type PostgresEngine } from "../../src/db/postgres.ts";
import { memoryLogger } from "../../src/log.ts";
import { createRecord } from "../../src/records/create.ts";
import { CHANGES_CHANNEL, relayFlushed } from "../../src/realtime/relay.ts";
import { freshDatabaseUrl } from "../helpers/engine.ts";
import { postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

// The change events a process sends to the other nodes: the events of every transaction committed while
// the previous NOTIFY statement ran go out together, packed into as few notices as fit, in commit order.

warnIfSkipped();
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

test.skipIf(!postgresAvailable)("commits made while a notice is being sent go out together in one notice, in commit order", async () => {
  const url = await freshDatabaseUrl();
  const engine = openPostgres({ url, poolSize: 4 });
  // Holds the first NOTIFY statement until released, so the next commits queue behind it.
  const all = engine.all.bind(engine);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = 0;
  engine.all = (async (sql: string, params?: readonly SqlValue[]) => {
    if (sql.includes("pg_notify(") && held++ === 0) await gate;
    return all(sql, params);
  }) as typeof engine.all;
  const dir = mkdtempSync(join(tmpdir(), "baas-relay-"));
  const ctx: AppContext = createContext(loadConfig({ data: dir, port: 0 }, {}), { engine, log: memoryLogger() });
  cleanup.push(async () => {
    await closeContext(ctx);
    rmSync(dir, { recursive: true, force: true });
  });

  const notices: { n: string; e: { i: string }[] }[] = [];
  const listener = openPostgres({ url, poolSize: 1 }) as PostgresEngine;
  const stop = await listener.listen(CHANGES_CHANNEL, (payload) => notices.push(JSON.parse(payload)));
  cleanup.push(async () => {
    await stop();
    await listener.close();
  });

  await createCollection(ctx, { name: "notes", rules: { read: "public", create: "public" } });
  const committed: string[] = [];
  ctx.events.subscribe((e) => committed.push(String(e.record._id)));
  await createRecord(ctx, "notes", { n: 0 }, ADMIN);
  await waitFor(() => held > 0, { what: "the first notice to be on its way" });
  for (let n = 1; n <= 9; n++) await createRecord(ctx, "notes", { n }, ADMIN);
  release();
  await relayFlushed(ctx);
  const received = await waitFor(() => {
    const ids = notices.flatMap((m) => m.e.map((e) => e.i));
    return ids.length >= 10 ? ids : null;
  }, { what: "the ten events" });
  expect(received).toEqual(committed);
  expect(notices.map((m) => m.e.length)).toEqual([1, 9]);
});
