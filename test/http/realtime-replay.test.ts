import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createCollection, patchSettings, registerUser } from "../helpers/app.ts";
import { createLiveApp, followBare, syncStreams, type LiveApp, type SseClient } from "../helpers/sse.ts";

let t: LiveApp;
// On PostgreSQL the first app of a file waits for its database to be made.
beforeEach(async () => {
  t = createLiveApp();
  await createCollection(t, "markers");
}, 30_000);
afterEach(() => t.stop());

/** Opens an admin stream resuming from `lastEventId` on `topics`, and waits until the replay and one fresh marker arrived. */
async function resume(lastEventId: string, topics = "posts,markers", token: string | undefined = ADMIN_SECRET): Promise<SseClient> {
  const s = await t.stream({ token, headers: { "last-event-id": lastEventId }, query: `?subscribe=${topics}` });
  await syncStreams(t, [s]);
  return s;
}

const changesOf = (s: SseClient, collection: string) =>
  s.changes().filter((e) => e.data.collection === collection).map((e) => [e.event, e.data.record.title ?? e.data.record]);

describe("a resume replays only what still exists", () => {
  test("never a record hard-deleted after the event, nor the events of a collection dropped since (even if made again)", async () => {
    await createCollection(t, "posts");
    const s = await followBare(t, ["posts", "markers"], ADMIN_SECRET);
    const from = (await s.next((m) => m.event === "connect")).id!;
    await t.admin("POST", "/api/v1/posts", { title: "kept" });
    const gone = await t.admin("POST", "/api/v1/posts", { title: "gone" });
    await t.admin("PATCH", `/api/v1/posts/${gone.body._id}`, { title: "gone, edited" });
    expect((await t.admin("DELETE", `/api/v1/admin/collections/posts/records/${gone.body._id}`)).status).toBe(200);
    await syncStreams(t, [s]);
    expect(changesOf(s, "posts")).toEqual([
      ["create", "kept"],
      ["create", "gone"],
      ["update", "gone, edited"],
      ["delete", { _id: gone.body._id }],
    ]);

    // The hard delete itself is replayed (it shows nothing but the id); the record's earlier states are not.
    expect(changesOf(await resume(from), "posts")).toEqual([
      ["create", "kept"],
      ["delete", { _id: gone.body._id }],
    ]);

    // Dropped and made again under the same name, with another rule: another collection, none of the old events.
    expect((await t.admin("DELETE", "/api/v1/admin/collections/posts")).status).toBe(200);
    t.clock.advance(1_000);
    await createCollection(t, "posts", { read: "authenticated" });
    const fresh = await t.admin("POST", "/api/v1/posts", { title: "new posts" });
    expect(fresh.status).toBe(201);
    expect(changesOf(await resume(from), "posts")).toEqual([["create", "new posts"]]);
  });
});

describe("a record larger than a stream's buffer", () => {
  test("goes out whole, as a read returns it, and no stream is reset; a resume replays it as a reference ({ _id } and ref: true)", async () => {
    await createCollection(t, "big");
    const streams = [await followBare(t, ["big", "markers"]), await followBare(t, ["big", "markers"], ADMIN_SECRET)];
    const big = await t.admin("POST", "/api/v1/big", { title: "x".repeat(5 * 1024 * 1024) });
    expect(big.status).toBe(201);
    const small = await t.admin("POST", "/api/v1/big", { title: "small" });
    await syncStreams(t, streams);
    for (const s of streams) {
      expect(s.changes().filter((e) => e.data.collection === "big").map((e) => [e.event, e.data])).toEqual([
        ["create", { collection: "big", action: "create", record: big.body }],
        ["create", { collection: "big", action: "create", record: small.body }],
      ]);
      expect(s.messages.some((m) => m.event === "reset")).toBe(false);
      expect(s.ended).toBe(false);
    }
    // A resume replays it by reference: the replay buffer does not hold records of megabytes.
    const again = await resume(streams[1].changes()[0].id!, "big,markers");
    expect(changesOf(again, "big")).toEqual([["create", "small"]]);
    const replayed = await resume((await streams[1].next((m) => m.event === "connect")).id!, "big,markers");
    expect(replayed.changes().filter((e) => e.data.collection === "big").map((e) => e.data)).toEqual([
      { collection: "big", action: "create", record: { _id: big.body._id }, ref: true },
      { collection: "big", action: "create", record: small.body },
    ]);
  });
});

describe("a large record, read under an expression rule", () => {
  test("goes to the streams the rule lets through, live and as a reference in a resume (the rule then asked of the stored row)", async () => {
    const fields = [{ name: "title", type: "text" }, { name: "vis", type: "text" }];
    // One rule reads only the caller's id (asked for all users in one statement), one reads their roles.
    await createCollection(t, "byowner", { read: "vis = 'all' || _owner_id = @auth.id", create: "authenticated" }, { fields });
    await createCollection(t, "byrole", { read: "vis = 'all' || @auth.roles ?= 'staff'" }, { fields });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${alice.id}`, { roles: ["staff"] })).status).toBe(200);
    const topics = ["byowner", "byrole", "markers"];
    const [a, b, anon] = [await followBare(t, topics, alice.token), await followBare(t, topics, bob.token), await followBare(t, topics)];
    const big = "x".repeat(2 * 1024 * 1024);
    const mine = await t.req("POST", "/api/v1/byowner", { token: bob.token, body: { title: big, vis: "none" } });
    expect(mine.status).toBe(201);
    const open = await t.admin("POST", "/api/v1/byowner", { title: big, vis: "all" });
    const staff = await t.admin("POST", "/api/v1/byrole", { title: big, vis: "none" });
    const shown = await t.admin("POST", "/api/v1/byrole", { title: big, vis: "all" });
    await syncStreams(t, [a, b, anon]);
    const whole = (s: SseClient) => s.changes().filter((e) => e.data.record.title === big).map((e) => e.data.record._id);
    expect(whole(a)).toEqual([open.body._id, staff.body._id, shown.body._id]);
    expect(whole(b)).toEqual([mine.body._id, open.body._id, shown.body._id]);
    expect(whole(anon)).toEqual([open.body._id, shown.body._id]);
    // Resumed from their first event, each gets the ones after it by reference, under the same rule.
    const refs = async (s: SseClient, token?: string) => {
      const r = await resume(s.changes()[0].id!, topics.join(","), token);
      await syncStreams(t, [r]);
      return r.changes().filter((e) => e.data.ref === true).map((e) => e.data.record._id);
    };
    expect(await refs(a, alice.token)).toEqual([staff.body._id, shown.body._id]);
    expect(await refs(b, bob.token)).toEqual([open.body._id, shown.body._id]);
    expect(await refs(anon, "")).toEqual([shown.body._id]);
  });
});

describe("event ids", () => {
  test("are opaque: no count of other writes can be read from them, and an altered id is never resumed", async () => {
    await createCollection(t, "posts");
    await createCollection(t, "hidden", { read: "disabled" });
    const s = await followBare(t, ["posts"]);
    await t.admin("POST", "/api/v1/posts", { title: "a" });
    for (let i = 0; i < 5; i++) await t.admin("POST", "/api/v1/hidden", { n: i });
    await t.admin("POST", "/api/v1/posts", { title: "b" });
    const [a, b] = await s.waitChanges(2);
    for (const id of [a.id!, b.id!]) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // Every id with one character changed (a guess at a neighbouring event) starts with reset.
    for (const c of "0123456789AQgw_-") {
      const forged = a.id!.slice(0, -1) + c;
      if (forged === a.id) continue;
      const r = await t.stream({ headers: { "last-event-id": forged }, query: "?subscribe=posts" });
      await r.clientId();
      expect({ forged, first: r.messages[0].event }).toEqual({ forged, first: "reset" });
      r.close();
    }
    // The genuine one resumes.
    const r = await t.stream({ headers: { "last-event-id": a.id! }, query: "?subscribe=posts" });
    expect((await r.waitChanges(1))[0]).toEqual(b);
  });
});

describe("limits per stream", () => {
  test("at most 1,000 topics, and at most 20 different filters that need a query; more is 400", async () => {
    await patchSettings(t, { realtime_max_topics_per_ip: 100_000 });
    await createCollection(t, "parents");
    await createCollection(t, "kids");
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "kids", from_field: "parent", to_col: "parents", type: "one" })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "parents", from_field: "kids", to_col: "kids", type: "many", to_field: "parent" })).status).toBe(201);
    await t.admin("POST", "/api/v1/parents", { title: "p" });
    const s = await t.stream();
    const id = await s.clientId();
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ collection: "parents", filter: `kids:eq:k${i}` }));
    expect((await t.subscribe(id, Array.from({ length: 1000 }, () => "markers"))).status).toBe(200);
    const tooMany = await t.subscribe(id, Array.from({ length: 1001 }, () => "markers"));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toEqual({ error: "a stream takes at most 1000 topics", code: "bad_request" });
    // The same filter many times, or filters on the record's own fields, cost no query: they do not count.
    const same = Array.from({ length: 500 }, () => ({ collection: "parents", filter: "kids:ne:null" }));
    const plain = Array.from({ length: 400 }, (_, i) => ({ collection: "parents", filter: `title:eq:t${i}` }));
    expect((await t.subscribe(id, [...many(19), ...same, ...plain])).status).toBe(200);
    const queries = await t.subscribe(id, many(21));
    expect(queries.status).toBe(400);
    expect(queries.body).toEqual({ error: "a stream takes at most 20 different filters on many or many_via fields", code: "bad_request" });
  });
});
