import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createCollection, registerUser } from "../helpers/app.ts";
import { rotateAdminSecret } from "../../src/auth/admin.ts";
import { createLiveApp, followBare, syncStreams, until, type LiveApp, type SseClient } from "../helpers/sse.ts";

// CONTRACT §10 sentence by sentence, over a real port: what the other realtime test files leave open (the 25 s
// keep-alive is in realtime-keepalive.waits.ts, run beside the suites).

let t: LiveApp;
beforeEach(() => {
  t = createLiveApp();
});
afterEach(() => t.stop());

const follow = (topics: unknown[], token?: string) => followBare(t, topics, token);
const marker = (streams: SseClient[]) => syncStreams(t, streams);

/** The change events of one collection, as [event, data]. */
const of = (s: SseClient, col: string) => s.changes().filter((e) => e.data.collection === col).map((e) => [e.event, e.data]);

describe("POST /realtime errors", () => {
  test("wrong credentials are 401 unauthorized with WWW-Authenticate, and leave the stream unbound", async () => {
    await createCollection(t, "posts");
    const s = await t.stream();
    const id = await s.clientId();
    const res = await t.req("POST", "/api/v1/realtime", { body: { client_id: id, subscriptions: ["posts"] }, token: "not-a-token" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String), code: "unauthorized" });
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    // Nothing was bound: anonymous may still take the stream.
    expect((await t.subscribe(id, ["posts"])).status).toBe(200);
    const wrong: Record<string, string>[] = [{ authorization: "Bearer not-a-token" }, { "x-api-key": "baas_nope" }];
    for (const headers of wrong) {
      const get = await t.stream({ headers });
      expect(get.response.status).toBe(401);
      expect(get.response.headers.get("www-authenticate")).toStartWith("Bearer");
      expect(await get.response.json()).toEqual({ error: expect.any(String), code: "unauthorized" });
    }
  });

  test("a stream bound to the admin is 403 for a user; one bound to a user is 403 for the admin", async () => {
    await createCollection(t, "posts");
    const alice = await registerUser(t, "alice@example.com");
    const byAdmin = await t.stream({ headers: { "x-admin-token": ADMIN_SECRET } });
    const res = await t.subscribe(await byAdmin.clientId(), ["posts"], alice.token);
    expect(res).toMatchObject({ status: 403, body: { error: expect.any(String), code: "forbidden" } });
    const byAlice = await follow(["posts"], alice.token);
    const res2 = await t.subscribe(await byAlice.clientId(), ["posts"], ADMIN_SECRET);
    expect(res2).toMatchObject({ status: 403, body: { error: expect.any(String), code: "forbidden" } });
  });
});

describe("POST /realtime answers", () => {
  test("200 { ok: true, subscriptions } echoes the topics exactly as sent, whatever the case of a collection name", async () => {
    await createCollection(t, "posts");
    await t.admin("POST", "/api/v1/posts", { title: "seed", n: 0 });
    const s = await t.stream();
    const topics = ["Posts", "POSTS/abc", { collection: "PoStS", filter: ["title:eq:x", "n:gte:2"] }, { collection: "posts", filter: "filter=title:eq:y" }];
    const res = await t.subscribe(await s.clientId(), topics);
    expect(res).toMatchObject({ status: 200, body: { ok: true, subscriptions: topics } });
    expect(res.body).toEqual({ ok: true, subscriptions: topics });
    const created = await t.admin("POST", "/api/v1/posts", { title: "x", n: 3 });
    const [ev] = await s.waitChanges(1);
    expect(ev).toEqual({ event: "create", id: expect.any(String), data: { collection: "posts", action: "create", record: created.body } });
  });

  test("a second POST replaces the topics (not adds to them); [] pauses the stream", async () => {
    for (const name of ["posts", "tags"]) await createCollection(t, name);
    const s = await t.stream();
    const id = await s.clientId();
    expect((await t.subscribe(id, ["posts"])).status).toBe(200);
    await t.admin("POST", "/api/v1/posts", { title: "p1" });
    await s.waitChanges(1);
    expect((await t.subscribe(id, ["tags"])).body).toEqual({ ok: true, subscriptions: ["tags"] });
    await t.admin("POST", "/api/v1/posts", { title: "p2" });
    await t.admin("POST", "/api/v1/tags", { title: "t1" });
    await s.waitChanges(2);
    expect((await t.subscribe(id, [])).body).toEqual({ ok: true, subscriptions: [] });
    await t.admin("POST", "/api/v1/tags", { title: "t2" });
    expect((await t.subscribe(id, ["tags"])).status).toBe(200);
    const t3 = await t.admin("POST", "/api/v1/tags", { title: "t3" });
    await s.next((e) => e.data?.record?._id === t3.body._id);
    expect(s.changes().map((e) => e.data.record.title)).toEqual(["p1", "t1", "t3"]);
  });

  test("missing subscriptions or client_id is 400; the client_id of a stream that ended is 404", async () => {
    await createCollection(t, "posts");
    const s = await t.stream();
    const id = await s.clientId();
    const missing = await t.req("POST", "/api/v1/realtime", { body: { client_id: id } });
    expect(missing).toMatchObject({ status: 400, body: { error: expect.any(String), code: "bad_request" } });
    for (const body of [{ subscriptions: ["posts"] }, { client_id: 5, subscriptions: ["posts"] }]) {
      const noClient = await t.req("POST", "/api/v1/realtime", { body });
      expect(noClient).toMatchObject({ status: 400, body: { error: expect.any(String), code: "bad_request" } });
    }
    s.close();
    // The server notices the disconnect on its own time: ask again until it has.
    const deadline = Date.now() + 5_000;
    let gone = await t.subscribe(id, ["posts"]);
    while (gone.status !== 404 && Date.now() < deadline) {
      await Bun.sleep(20);
      gone = await t.subscribe(id, ["posts"]);
    }
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: expect.any(String), code: "not_found" });
  });
});

describe("who gets what", () => {
  beforeEach(() => createCollection(t, "markers"));

  test("X-Admin-Token and X-API-Key on GET bind the stream: admin sees every owner record, the key's user only theirs", async () => {
    await createCollection(t, "notes", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: alice.token, body: { name: "k" } });
    expect(key.status).toBe(201);
    const admin = await t.stream({ headers: { "x-admin-token": ADMIN_SECRET }, query: "?subscribe=notes,markers" });
    const byKey = await t.stream({ headers: { "x-api-key": key.body.key }, query: "?subscribe=notes,markers" });
    const a = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { title: "a" } });
    const b = await t.req("POST", "/api/v1/notes", { token: bob.token, body: { title: "b" } });
    await marker([admin, byKey]);
    expect(of(admin, "notes")).toEqual([
      ["create", { collection: "notes", action: "create", record: a.body }],
      ["create", { collection: "notes", action: "create", record: b.body }],
    ]);
    expect(of(byKey, "notes")).toEqual([["create", { collection: "notes", action: "create", record: a.body }]]);
  });

  test("an anonymous subscriber of a public collection gets every change, its record as an anonymous read returns it", async () => {
    await createCollection(t, "posts", { read: "public", create: "public", update: "public", delete: "public" });
    const anon = await follow(["posts"]);
    const c = await t.req("POST", "/api/v1/posts", { body: { title: "a", n: 1 } });
    await t.req("PATCH", `/api/v1/posts/${c.body._id}`, { body: { n: 2 } });
    const read = await t.req("GET", `/api/v1/posts/${c.body._id}`);
    const d = await t.req("DELETE", `/api/v1/posts/${c.body._id}`);
    const events = await anon.waitChanges(3);
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ["create", { collection: "posts", action: "create", record: c.body }],
      ["update", { collection: "posts", action: "update", record: read.body }],
      ["delete", { collection: "posts", action: "delete", record: d.body }],
    ]);
  });

  test("a `many` field is computed per reader, with the user's roles as they are at delivery, whatever the stream's token says", async () => {
    await createCollection(t, "authors");
    await createCollection(t, "reviews", { read: { role: "editor" }, create: "authenticated" });
    const rel = (body: Record<string, unknown>) => t.admin("POST", "/api/v1/admin/relations", body);
    expect((await rel({ from_col: "reviews", from_field: "author", to_col: "authors", type: "one" })).status).toBe(201);
    expect((await rel({ from_col: "authors", from_field: "reviews", to_col: "reviews", type: "many", to_field: "author" })).status).toBe(201);
    const ann = await registerUser(t, "ann@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const author = await t.admin("POST", "/api/v1/authors", { title: "writer" });
    const review = await t.admin("POST", "/api/v1/reviews", { author: author.body._id });
    // Ann's stream is opened with a token from before the role: the role holds for it all the same.
    const annStream = await follow(["authors", "markers"], ann.token);
    const bobStream = await follow(["authors", "markers"], bob.token);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ann.id}`, { roles: ["editor"] })).status).toBe(200);
    await t.admin("PATCH", `/api/v1/authors/${author.body._id}`, { title: "writer!" });
    await marker([annStream, bobStream]);
    const got = (s: SseClient, i: number) => of(s, "authors")[i][1].record.reviews;
    expect(got(annStream, 0)).toEqual([review.body._id]);
    expect(got(bobStream, 0)).toBeNull();
    // As a read of a fresh login (its token carries the roles of now) returns it.
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "ann@example.com", password: "password123" } });
    expect(of(annStream, "authors")[0][1].record).toEqual((await t.req("GET", `/api/v1/authors/${author.body._id}`, { token: login.body.access_token })).body);
    expect(of(bobStream, "authors")[0][1].record).toEqual((await t.req("GET", `/api/v1/authors/${author.body._id}`, { token: bob.token })).body);
    // Removed, it no longer holds.
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ann.id}`, { roles: [] })).status).toBe(200);
    await t.admin("PATCH", `/api/v1/authors/${author.body._id}`, { title: "writer!!" });
    await marker([annStream]);
    expect(got(annStream, 1)).toBeNull();
  });

  test("a hard delete under an owner rule is a delete with { _id } only, for the owner and the admin, never for another user", async () => {
    await createCollection(t, "notes", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const a = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { title: "a" } });
    const streams = {
      alice: await follow(["notes", "markers"], alice.token),
      bob: await follow(["notes", "markers"], bob.token),
      admin: await follow(["notes", "markers"], ADMIN_SECRET),
      single: await follow([`notes/${a.body._id}`, "markers"], alice.token),
    };
    expect((await t.admin("DELETE", `/api/v1/admin/collections/notes/records/${a.body._id}`)).status).toBe(200);
    await marker(Object.values(streams));
    const hard = [["delete", { collection: "notes", action: "delete", record: { _id: a.body._id } }]];
    expect(of(streams.alice, "notes")).toEqual(hard);
    expect(of(streams.admin, "notes")).toEqual(hard);
    expect(of(streams.single, "notes")).toEqual(hard);
    expect(of(streams.bob, "notes")).toEqual([]);
  });

  test("a filter topic follows the record after the change: moving in is an event, moving out or staying out none", async () => {
    await createCollection(t, "tasks");
    const open = await t.admin("POST", "/api/v1/tasks", { status: "open", title: "open" });
    const closed = await t.admin("POST", "/api/v1/tasks", { status: "done", title: "closed" });
    const s = await follow([{ collection: "tasks", filter: "status:eq:open" }, "markers"], ADMIN_SECRET);
    await t.admin("PATCH", `/api/v1/tasks/${open.body._id}`, { status: "done" }); // out: nothing
    await t.admin("PATCH", `/api/v1/tasks/${closed.body._id}`, { title: "still closed" }); // stays out: nothing
    const reopened = await t.admin("PATCH", `/api/v1/tasks/${closed.body._id}`, { status: "open" }); // in: update
    const deleted = await t.admin("DELETE", `/api/v1/tasks/${closed.body._id}`); // matching record deleted: delete
    await t.admin("DELETE", `/api/v1/tasks/${open.body._id}`); // a non-matching record deleted: nothing
    await marker([s]);
    expect(of(s, "tasks")).toEqual([
      ["update", { collection: "tasks", action: "update", record: reopened.body }],
      ["delete", { collection: "tasks", action: "delete", record: deleted.body }],
    ]);
  });
});

describe("after commit only", () => {
  test("a bulk or an update that fails part-way (unique violation) sends nothing; the next change arrives alone", async () => {
    await createCollection(t, "codes");
    await t.admin("POST", "/api/v1/codes", { code: "taken" });
    expect((await t.admin("POST", "/api/v1/admin/collections/codes/indexes", { fields: ["code"], unique: true })).status).toBe(201);
    const s = await follow(["codes"], ADMIN_SECRET);
    const bulk = await t.admin("POST", "/api/v1/codes/bulk", [{ code: "a" }, { code: "b" }, { code: "taken" }]);
    expect(bulk.status).toBe(409);
    const other = await t.admin("POST", "/api/v1/codes", { code: "c" });
    const clash = await t.admin("PATCH", `/api/v1/codes/${other.body._id}`, { code: "taken" });
    expect(clash.status).toBe(409);
    const last = await t.admin("POST", "/api/v1/codes", { code: "d" });
    await s.next((e) => e.data?.record?._id === last.body._id);
    expect(s.changes().map((e) => [e.event, e.data.record.code])).toEqual([
      ["create", "c"],
      ["create", "d"],
    ]);
  });
});

describe("ids and resume", () => {
  test("every frame carries an id: connect, each change, and a reset; a resume from the newest id replays nothing", async () => {
    await createCollection(t, "posts");
    const s = await follow(["posts"], ADMIN_SECRET);
    for (const title of ["a", "b", "c"]) await t.admin("POST", "/api/v1/posts", { title });
    await s.waitChanges(3);
    for (const m of s.messages) expect(m.id).toMatch(/\S/);
    const ids = s.messages.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);

    const last = s.changes()[2].id!;
    const resumed = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": last }, query: "?subscribe=posts" });
    await resumed.clientId();
    const d = await t.admin("POST", "/api/v1/posts", { title: "d" });
    const [only] = await resumed.waitChanges(1);
    expect(only.data.record).toEqual(d.body);
    expect(resumed.changes().length).toBe(1);

    const reset = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": "elsewhere-5" } });
    await reset.clientId();
    expect(reset.messages.map((m) => m.event)).toEqual(["reset", "connect"]);
    expect(reset.messages[0].data).toEqual({ reason: "too_old" });
    for (const m of reset.messages) expect(m.id).toMatch(/\S/);
  });

  test("the last 1,000 events are held even when older than 5 minutes; an id older than both gets reset first", async () => {
    await createCollection(t, "items");
    const s = await follow(["items"], ADMIN_SECRET);
    await t.admin("POST", "/api/v1/items", { n: -2 });
    await t.admin("POST", "/api/v1/items", { n: -1 });
    const [first, second] = await s.waitChanges(2);
    t.clock.advance(6 * 60_000);
    // Still held: fewer than 1,000 events, though 6 minutes old.
    const early = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": first.id! }, query: "?subscribe=items" });
    const [replayed] = await early.waitChanges(1);
    expect(replayed).toEqual(second);
    expect(early.messages[0].event).toBe("connect");
    early.close();

    for (let round = 0; round < 2; round++) {
      const rows = Array.from({ length: 500 }, (_, i) => ({ n: round * 500 + i }));
      expect((await t.admin("POST", "/api/v1/items/bulk", rows)).status).toBe(201);
    }
    await s.waitChanges(1002);
    // 1,002 held, the two oldest are past 5 minutes: the one after `first` is gone, so `first` is too old...
    const late = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": first.id! }, query: "?subscribe=items" });
    await late.clientId();
    expect(late.messages.map((m) => [m.event, m.data])).toEqual([
      ["reset", { reason: "too_old" }],
      ["connect", { client_id: expect.any(String) }],
    ]);
    // ...while `second` still is covered: everything after it is held.
    const covered = await t.stream({ token: ADMIN_SECRET, headers: { "last-event-id": second.id! }, query: "?subscribe=items" });
    const replay = await covered.waitChanges(1000);
    expect(replay.map((e) => e.data.record.n)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(covered.messages.some((m) => m.event === "reset")).toBe(false);
  });
});

describe("identity ends, stream ends", () => {
  test("a rotated admin secret closes the streams of the old secret and of admin tokens within 1 s", async () => {
    await t.stop();
    t = createLiveApp({ env: { ADMIN_SECRET: "" } });
    // Without ADMIN_SECRET the secret is the stored one; rotating it here makes one the test knows.
    const secret = await rotateAdminSecret(t.ctx);
    expect((await t.req("POST", "/api/v1/admin/collections", { token: secret, body: { name: "posts" } })).status).toBe(201);
    const login = await t.req("POST", "/api/v1/admin/login", { body: { secret } });
    expect(login.status).toBe(200);
    const bySecret = await t.stream({ token: secret, query: "?subscribe=posts" });
    const byToken = await t.stream({ headers: { "x-admin-token": login.body.token }, query: "?subscribe=posts" });
    const anon = await t.stream({ query: "?subscribe=posts" });
    for (const s of [bySecret, byToken, anon]) await s.clientId();
    // The baseline: how long a change takes to reach a stream on this machine now.
    const started = Date.now();
    expect((await t.req("POST", "/api/v1/posts", { token: secret, body: { title: "baseline" } })).status).toBe(201);
    await anon.waitChanges(1);
    const baseline = Date.now() - started;
    const rotated = await t.req("POST", "/api/v1/admin/rotate-secret", { token: secret });
    expect(rotated.status).toBe(200);
    const done = Date.now();
    await until(() => bySecret.ended && byToken.ended, undefined, "the admin streams to end");
    // "Within 1 second" on a machine that delivers an event in milliseconds; on a busy one, as many
    // deliveries' time as make a second on a quiet one.
    expect(Math.max(bySecret.endedAt, byToken.endedAt) - done).toBeLessThan(Math.max(1_000, 20 * baseline));
    expect(anon.ended).toBe(false);
  });
});
