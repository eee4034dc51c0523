import { afterEach, expect, test } from "bun:test";
import { createCollection } from "../helpers/app.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// A stream takes at most 1,000 topics: more is 400 at the default settings too, though the topics an address
// may hold (realtime_max_topics_per_ip) default to the same 1,000; the per-address 429 is for what is left.

let t: LiveApp;
afterEach(() => t?.stop());

test("1,001 topics are 400, by POST and by ?subscribe=, before the limit per address", async () => {
  t = createLiveApp();
  await createCollection(t, "posts", { read: "public", create: "public", update: "public", delete: "public" });
  const s = await t.stream();
  const id = await s.clientId();
  const posted = await t.subscribe(id, Array.from({ length: 1001 }, () => "posts"));
  expect({ status: posted.status, body: posted.body }).toEqual({ status: 400, body: { error: "a stream takes at most 1000 topics", code: "bad_request" } });
  const opened = await fetch(`${t.base}/api/v1/realtime?subscribe=${Array.from({ length: 1001 }, () => "posts").join(",")}`);
  expect(opened.status).toBe(400);
  expect(await opened.json()).toEqual({ error: "a stream takes at most 1000 topics", code: "bad_request" });
  // 1,000 fit, and then another stream of the address is over the address's 1,000: 429.
  expect((await t.subscribe(id, Array.from({ length: 1000 }, () => "posts"))).status).toBe(200);
  const other = await t.stream();
  const more = await t.subscribe(await other.clientId(), ["posts"]);
  expect({ status: more.status, code: more.body.code }).toEqual({ status: 429, code: "rate_limited" });
});
