import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BaasError, createClient, type RealtimeEvent, type SystemFields } from "../../client/src/index.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

// Named `*.waits.ts`: most of this file's time goes waiting for an access token to expire (its shortest lifetime
// is 10 s), so `npm test` runs it on each engine in a process of its own beside the suites (scripts/test.ts); a
// plain `bun test` does not pick it up. By hand: `npx bun test ./test/client/realtime.waits.ts`.

setDefaultTimeout(60_000);

interface Post extends SystemFields {
  title: string | null;
}

let srv: ServerProcess;
let users = 0;

/** The admin API through the client itself, with the admin secret as Bearer token. */
const admin = (method: string, path: string, body?: unknown) =>
  createClient(srv.url, { headers: { Authorization: `Bearer ${ADMIN_SECRET}` } }).request(method, path, { body, auth: false });

/** A client (session in memory) that notes every request it sends as `METHOD path`. */
function newClient() {
  const sent: string[] = [];
  const client = createClient(srv.url, { fetch: (url, init) => (sent.push(`${init.method} ${new URL(url).pathname}`), fetch(url, init)) });
  return { client, sent };
}

/** Collects a subscription's events. */
function collector<T>() {
  const events: RealtimeEvent<T>[] = [];
  return { events, handler: (e: RealtimeEvent<T>) => void events.push(e) };
}

const titles = (events: RealtimeEvent<Post>[]) => events.map((e) => `${e.action}:${e.record.title}`);

// One server for the file; each test uses its own collection, so the tests pass in any order.
beforeAll(async () => {
  srv = await spawnServer();
  await admin("PATCH", "/admin/settings", { access_token_ttl_seconds: 10 });
});
afterAll(async () => {
  await srv?.cleanup();
});

describe("client realtime against a real server", () => {
  test("subscribe opens the stream, posts the topic, and the handler gets create, update, delete and restore in order", async () => {
    await admin("POST", "/admin/collections", { name: "rt_public", rules: { read: "public", create: "public", update: "public", delete: "public" } });
    const { client, sent } = newClient();
    const c = collector<Post>();
    const stop = await client.subscribe<Post>("rt_public", c.handler);
    expect(sent).toContain("GET /api/v1/realtime");
    expect(sent).toContain("POST /api/v1/realtime");

    const posts = client.collection<Post>("rt_public");
    const p = await posts.create({ title: "one" });
    await posts.update(p._id, { title: "two" });
    await posts.delete(p._id);
    await posts.restore(p._id);
    await waitFor(() => c.events.length >= 4, { what: "four events" });
    expect(titles(c.events)).toEqual(["create:one", "update:two", "delete:two", "restore:two"]);
    expect(c.events.every((e) => e.collection === "rt_public" && e.record._id === p._id && e.id)).toBe(true);
    await stop();
  });

  test("a record topic gets only that record; an unsubscribed handler gets nothing more while others go on", async () => {
    await admin("POST", "/admin/collections", { name: "rt_topics", rules: { read: "public", create: "public", update: "public" } });
    const { client } = newClient();
    const posts = client.collection<Post>("rt_topics");
    const first = await posts.create({ title: "first" });
    const all = collector<Post>();
    const one = collector<Post>();
    const gone = collector<Post>();
    const stopAll = await client.subscribe<Post>("rt_topics", all.handler);
    const stopOne = await client.subscribe<Post>(`rt_topics/${first._id}`, one.handler);
    const stopGone = await client.subscribe<Post>("rt_topics", gone.handler);
    await stopGone();

    await posts.create({ title: "second" });
    await posts.update(first._id, { title: "first again" });
    await waitFor(() => all.events.length >= 2, { what: "both events" });
    expect(titles(all.events)).toEqual(["create:second", "update:first again"]);
    // Events reach every handler in one dispatch, so by now the others have theirs too.
    expect(titles(one.events)).toEqual(["update:first again"]);
    expect(gone.events).toEqual([]);
    await stopOne();
    await stopAll();
  });

  test("the topics are posted with the session's token: under an owner rule a user gets their own records only", async () => {
    await admin("POST", "/admin/collections", { name: "rt_owned", rules: { read: "owner", create: "authenticated" } });
    const alice = newClient().client;
    const bob = newClient().client;
    await alice.auth.register(`alice${++users}@example.com`, "password123");
    await bob.auth.register(`bob${++users}@example.com`, "password123");
    const c = collector<Post>();
    const stop = await alice.subscribe<Post>("rt_owned", c.handler);
    await bob.collection<Post>("rt_owned").create({ title: "bob's" });
    await alice.collection<Post>("rt_owned").create({ title: "alice's" });
    await waitFor(() => c.events.length >= 1, { what: "alice's event" });
    // Fan-out keeps commit order: had bob's record reached alice, it would have come first.
    expect(titles(c.events)).toEqual(["create:alice's"]);
    await stop();
  });

  test("a record of megabytes comes whole in its event, in order, without a read of its own", async () => {
    await admin("POST", "/admin/collections", { name: "rt_large", rules: { read: "public", create: "public", update: "public" } });
    const { client, sent } = newClient();
    const c = collector<Post>();
    const stop = await client.subscribe<Post>("rt_large", c.handler);
    const posts = client.collection<Post>("rt_large");
    const large = await posts.create({ title: "x".repeat(3 * 1024 * 1024) });
    const small = await posts.create({ title: "small" });
    await waitFor(() => c.events.length >= 2, { timeoutMs: 10_000, what: "both events" });
    expect(c.events.map((e) => [e.action, e.record])).toEqual([
      ["create", large],
      ["create", small],
    ]);
    expect(sent).not.toContain(`GET /api/v1/rt_large/${large._id}`);
    await stop();
  });

  test("a topic the server refuses rejects with its BaasError and is not kept", async () => {
    const { client } = newClient();
    const err = await client.subscribe("no_such_collection", () => {}).catch((e) => e);
    expect(err).toBeInstanceOf(BaasError);
    expect(err.status).toBe(400);
    expect(err.code).toBe("bad_request");
    // The stream closed with the failed (only) subscription; a valid one opens a new one.
    await admin("POST", "/admin/collections", { name: "rt_after", rules: { read: "public", create: "public" } });
    const c = collector<Post>();
    const stop = await client.subscribe<Post>("rt_after", c.handler);
    await client.collection<Post>("rt_after").create({ title: "x" });
    await waitFor(() => c.events.length >= 1, { what: "the event" });
    await stop();
  });

  test("when the access token expires the stream ends, reconnects, and the topics are posted again after one refresh", async () => {
    await admin("POST", "/admin/collections", { name: "rt_expiry", rules: { read: "authenticated", create: "public" } });
    const { client, sent } = newClient();
    await client.auth.register(`eve${++users}@example.com`, "password123");
    const c = collector<Post>();
    const stop = await client.subscribe<Post>("rt_expiry", c.handler);
    const streams = () => sent.filter((s) => s === "GET /api/v1/realtime").length;
    expect(streams()).toBe(1);
    // The server closes the stream at the token's exp (10 s); the client reconnects and posts its topics again,
    // after a refresh (its first post with the expired token may be refused before it: waited for until a post
    // follows the refresh, not only until one was sent).
    const refresh = "POST /api/v1/auth/refresh";
    await waitFor(() => streams() >= 2 && sent.includes(refresh) && sent.slice(sent.indexOf(refresh) + 1).includes("POST /api/v1/realtime"), {
      timeoutMs: 25_000,
      intervalMs: 200,
      what: "a reconnect with its topics posted again after a refresh",
    });
    expect(sent.filter((s) => s === refresh).length).toBe(1);
    await admin("POST", "/rt_expiry", { title: "after the reconnect" });
    await waitFor(() => c.events.length >= 1, { what: "the event after the reconnect" });
    expect(titles(c.events)).toEqual(["create:after the reconnect"]);
    await stop();
  });
});
