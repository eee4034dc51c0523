import { afterEach, expect, test } from "bun:test";
import { realtimeHub } from "../../src/realtime/hub.ts";
import { ADMIN_SECRET, createCollection } from "../helpers/app.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

let t: LiveApp;
afterEach(() => t.stop());

test("a process no stream ever followed holds no events; from the first stream on they are held and resumed", async () => {
  t = createLiveApp();
  await createCollection(t, "posts");
  // No stream has had an event id of this process, so none of these could ever be resumed.
  const rows = Array.from({ length: 500 }, (_, i) => ({ n: i }));
  expect((await t.admin("POST", "/api/v1/posts/bulk", rows)).status).toBe(201);
  expect(realtimeHub(t.ctx).held).toBe(0);

  const s = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=posts" });
  await s.clientId();
  await t.admin("POST", "/api/v1/posts", { n: 1000 });
  await t.admin("POST", "/api/v1/posts", { n: 1001 });
  const [first, second] = await s.waitChanges(2);
  expect(realtimeHub(t.ctx).held).toBe(2);
  // A resume gets what it missed.
  const resumed = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": first.id! }, query: "?subscribe=posts" });
  const [replayed] = await resumed.waitChanges(1);
  expect(replayed).toEqual(second);
  expect(resumed.messages[0].event).toBe("connect");
});
