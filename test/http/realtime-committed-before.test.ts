import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import type { SqlValue } from "../../src/db/engine.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { realtimeHub } from "../../src/realtime/hub.ts";
import { listenForChanges } from "../../src/realtime/relay.ts";
import { ADMIN_SECRET, createCollection } from "../helpers/app.ts";
import { freshDatabaseUrl, onPostgres } from "../helpers/engine.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";
import { waitFor } from "../helpers/wait.ts";

// CONTRACT §10: a stream gets the changes committed after it opened, and a topic change judges what was committed
// before it by the topics the stream had then. On PostgreSQL a node's own events reach its streams when their
// notice comes back from the database, a round trip after the write was answered: here that notice is held until
// the stream is open (or the topic change made), so the answer comes back long before the event does.

setDefaultTimeout(60_000);
let t: LiveApp;
let stopListening: () => Promise<void> = async () => {};
afterEach(async () => {
  await stopListening();
  await t.stop();
});

test("a write answered before a stream opened, or before its topics were set, is not delivered to it as new; a resume from before still gets it", async () => {
  // On PostgreSQL an engine that listens, as a server's does.
  t = createLiveApp(onPostgres ? { context: { engine: openPostgres({ url: await freshDatabaseUrl(), poolSize: 4 }) } } : {});
  const db = t.ctx.db;
  // The statement that sends the change notices (PostgreSQL) waits for `release` while `gated`.
  let gated = false;
  let held = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const all = db.all.bind(db);
  db.all = (async (sql: string, params?: readonly SqlValue[]) => {
    if (gated && sql.includes("pg_notify(")) {
      held++;
      await gate;
    }
    return all(sql, params);
  }) as typeof db.all;
  await createCollection(t, "notes", { read: "public", create: "public" });
  await createCollection(t, "markers", { read: "public", create: "public" });
  if (onPostgres) stopListening = await listenForChanges(t.ctx);

  // Opened before the write: one following markers only (its topics changed after the write), one to resume from.
  const changed = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=markers" });
  await changed.clientId();
  const before = changed.messages[0]!.id!;

  gated = true;
  const made = await t.admin("POST", "/api/v1/notes", { title: "before" });
  expect(made.status).toBe(201);
  if (onPostgres) await waitFor(() => held > 0, { what: "the write's notice to be held" });

  // Opened after the write was answered (its notice still held).
  const fresh = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=notes,markers" });
  const bare = await t.stream({ token: ADMIN_SECRET });
  await fresh.clientId();
  expect((await t.subscribe(await bare.clientId(), ["notes", "markers"], ADMIN_SECRET)).status).toBe(200);
  // A reconnect with the id of an event before the write: it missed the write, which it gets.
  const resumed = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=notes,markers", headers: { "last-event-id": before } });
  await resumed.clientId();
  // The topic change of the stream opened before the write: the write goes by its topics then (markers only).
  const subscribing = t.subscribe(await changed.clientId(), ["notes", "markers"], ADMIN_SECRET);
  let answered = false;
  void subscribing.then(() => (answered = true));
  // The notice goes out once the topic change is answered, or waits for it (it must not come before it is asked).
  if (onPostgres) await waitFor(() => answered || realtimeHub(t.ctx).waiting > 0, { what: "the topic change to be under way" });
  gated = false;
  release();
  expect((await subscribing).status).toBe(200);

  const marker = await t.admin("POST", "/api/v1/markers", { at: 1 });
  expect(marker.status).toBe(201);
  const streams = { fresh, bare, changed, resumed };
  for (const s of Object.values(streams)) await s.next((m) => m.data?.record?._id === marker.body._id);
  const got = Object.fromEntries(Object.entries(streams).map(([k, s]) => [k, s.changes().map((m) => [m.event, m.data.record._id])]));
  expect(got).toEqual({
    fresh: [["create", marker.body._id]],
    bare: [["create", marker.body._id]],
    changed: [["create", marker.body._id]],
    resumed: [
      ["create", made.body._id],
      ["create", marker.body._id],
    ],
  });
});
