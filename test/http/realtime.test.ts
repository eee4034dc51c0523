import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createCollection, registerUser } from "../helpers/app.ts";
import { createLiveApp, type LiveApp, type SseClient } from "../helpers/sse.ts";

let t: LiveApp;
beforeEach(() => {
  t = createLiveApp();
});
afterEach(() => t.stop());

/** An admin stream subscribed to `topics`. */
async function adminStream(topics: unknown[]): Promise<SseClient> {
  const s = await t.stream({ token: ADMIN_SECRET });
  const res = await t.subscribe(await s.clientId(), topics, ADMIN_SECRET);
  expect(res.status).toBe(200);
  return s;
}

describe("GET and POST /api/v1/realtime", () => {
  test("the stream answers text/event-stream and its first event is connect with a client_id and an id", async () => {
    const s = await t.stream();
    expect(s.response.status).toBe(200);
    expect(s.response.headers.get("content-type")).toStartWith("text/event-stream");
    const first = await s.next(() => true);
    expect(first.event).toBe("connect");
    expect(Object.keys(first.data)).toEqual(["client_id"]);
    expect(first.data.client_id).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(first.id).toBeTruthy();
  });

  test("POST answers 200 { ok, subscriptions } echoing the topics; errors follow CONTRACT §1", async () => {
    await createCollection(t, "posts");
    await t.admin("POST", "/api/v1/posts", { title: "seed" });
    const s = await t.stream();
    const id = await s.clientId();
    const topics = ["posts", "posts/abc", { collection: "posts", filter: "title:eq:x" }];
    expect(await t.subscribe(id, topics)).toMatchObject({ status: 200, body: { ok: true, subscriptions: topics } });
    const cases: [unknown, unknown, number, string][] = [
      [id, ["nope"], 400, "bad_request"],
      [id, [{ collection: "posts", filter: "nofield:eq:1" }], 400, "bad_request"],
      [id, [{ collection: "posts", filter: "title:zz:1" }], 400, "bad_request"],
      [id, [{ collection: "posts", filter: "garbage" }], 400, "bad_request"],
      [id, [{ collection: "posts" }], 400, "bad_request"],
      [id, [42], 400, "bad_request"],
      [id, "posts", 400, "bad_request"],
      ["no-such-client", ["posts"], 404, "not_found"],
      [undefined, ["posts"], 400, "bad_request"],
    ];
    for (const [clientId, subs, status, code] of cases) {
      const res = await t.subscribe(clientId as string, subs);
      expect({ subs, status: res.status, body: res.body }).toEqual({ subs, status, body: { error: expect.any(String), code } });
    }
    const bad = await t.req("POST", "/api/v1/realtime", { body: "{nope" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_json");
  });

  test("a client_id bound to one identity is 403 for another user and for anonymous", async () => {
    await createCollection(t, "posts");
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const s = await t.stream();
    const id = await s.clientId();
    expect((await t.subscribe(id, ["posts"], alice.token)).status).toBe(200);
    const res = await t.subscribe(id, ["posts"], bob.token);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), code: "forbidden" });
    expect((await t.subscribe(id, ["posts"])).status).toBe(403);
    // The same user with another session's token may change the topics.
    const again = await t.req("POST", "/api/v1/auth/login", { body: { email: "alice@example.com", password: "password123" } });
    expect((await t.subscribe(id, [], again.body.access_token)).status).toBe(200);
  });

  test("wrong credentials on GET are 401, as on every route", async () => {
    const s = await t.stream({ token: "not-a-token" });
    expect(s.response.status).toBe(401);
    expect(await s.response.json()).toEqual({ error: expect.any(String), code: "unauthorized" });
  });

  test("GET with credentials in headers and ?subscribe= needs no second call", async () => {
    await createCollection(t, "posts");
    const alice = await registerUser(t, "alice@example.com");
    const s = await t.stream({ token: alice.token, query: "?subscribe=posts" });
    await s.clientId();
    const created = await t.req("POST", "/api/v1/posts", { token: alice.token, body: { title: "hi" } });
    const [ev] = await s.waitChanges(1);
    expect(ev).toEqual({ event: "create", id: expect.any(String), data: { collection: "posts", action: "create", record: created.body } });
    const unknown = await t.stream({ query: "?subscribe=nope" });
    expect(unknown.response.status).toBe(400);
  });
});

describe("events for every write path", () => {
  test("single create, update, delete, restore and hard delete, each as a read returns the record", async () => {
    await createCollection(t, "posts", { read: "public", create: "public", update: "public", delete: "public" });
    const s = await adminStream(["posts"]);
    const c = await t.req("POST", "/api/v1/posts", { body: { title: "a" } });
    const u = await t.req("PATCH", `/api/v1/posts/${c.body._id}`, { body: { title: "b" } });
    const d = await t.req("DELETE", `/api/v1/posts/${c.body._id}`);
    const r = await t.req("POST", `/api/v1/posts/${c.body._id}/restore`);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/posts/records/${c.body._id}`)).status).toBe(200);
    const events = await s.waitChanges(5);
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ["create", { collection: "posts", action: "create", record: c.body }],
      ["update", { collection: "posts", action: "update", record: u.body }],
      ["delete", { collection: "posts", action: "delete", record: d.body }],
      ["restore", { collection: "posts", action: "restore", record: r.body }],
      ["delete", { collection: "posts", action: "delete", record: { _id: c.body._id } }],
    ]);
    const ids = events.map((e) => e.id!);
    expect(new Set(ids).size).toBe(5);
  });

  test("a bulk insert sends one event per record; a batch one per operation; a rolled-back batch nothing", async () => {
    await createCollection(t, "items");
    const s = await adminStream(["items"]);
    const bulk = await t.admin("POST", "/api/v1/items/bulk", [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(bulk.status).toBe(201);
    await s.waitChanges(3);
    const failed = await t.admin("POST", "/api/v1/items/batch", {
      operations: [
        { op: "create", data: { n: 100 } },
        { op: "update", id: "missing", data: { n: 101 } },
      ],
    });
    expect(failed.status).toBe(400);
    const ok = await t.admin("POST", "/api/v1/items/batch", {
      operations: [
        { op: "create", data: { n: 4 } },
        { op: "update", id: bulk.body[0]._id, data: { n: 10 } },
        { op: "delete", id: bulk.body[1]._id },
      ],
    });
    expect(ok.status).toBe(200);
    // Events come in commit order: one from the rolled-back batch would sit among these six.
    const events = await s.waitChanges(6);
    expect(s.changes().map((e) => [e.event, e.data.record.n])).toEqual([
      ["create", 1],
      ["create", 2],
      ["create", 3],
      ["create", 4],
      ["update", 10],
      ["delete", 2],
    ]);
    expect(events[0].data.record).toEqual(bulk.body[0]);
  });

  test("a cascade sends delete (and restore) events for the pointing records; set_null sends update events", async () => {
    for (const name of ["authors", "books", "notes"]) await createCollection(t, name);
    const rel = (from: string, on_delete: string) =>
      t.admin("POST", "/api/v1/admin/relations", { from_col: from, from_field: "author", to_col: "authors", type: "one", on_delete });
    expect((await rel("books", "cascade")).status).toBe(201);
    expect((await rel("notes", "set_null")).status).toBe(201);
    const a = await t.admin("POST", "/api/v1/authors", { name: "x" });
    const b = await t.admin("POST", "/api/v1/books", { author: a.body._id });
    const n = await t.admin("POST", "/api/v1/notes", { author: a.body._id });
    const s = await adminStream(["books", "notes"]);
    expect((await t.admin("DELETE", `/api/v1/authors/${a.body._id}`)).status).toBe(200);
    await s.waitChanges(2);
    const byCol = Object.fromEntries(s.changes().map((e) => [e.data.collection, e]));
    expect(byCol.books.event).toBe("delete");
    expect(byCol.books.data.record).toMatchObject({ _id: b.body._id, _deleted_at: expect.any(Number) });
    expect(byCol.notes.event).toBe("update");
    expect(byCol.notes.data.record).toMatchObject({ _id: n.body._id, author: null });
    expect((await t.admin("POST", `/api/v1/authors/${a.body._id}/restore`)).status).toBe(200);
    const events = await s.waitChanges(3);
    expect(events[2]).toMatchObject({ event: "restore", data: { collection: "books", record: { _id: b.body._id, _deleted_at: null } } });
  });
});

describe("topics", () => {
  test("a single-record topic gets only that record's events", async () => {
    await createCollection(t, "posts");
    const one = await t.admin("POST", "/api/v1/posts", { title: "one" });
    const two = await t.admin("POST", "/api/v1/posts", { title: "two" });
    const s = await adminStream([`posts/${one.body._id}`]);
    await t.admin("PATCH", `/api/v1/posts/${two.body._id}`, { title: "two!" });
    await t.admin("PATCH", `/api/v1/posts/${one.body._id}`, { title: "one!" });
    await s.waitChanges(1);
    expect(s.changes().map((e) => e.data.record.title)).toEqual(["one!"]);
  });

  test("a filter topic gets an event when the record matches the filter after the change", async () => {
    await createCollection(t, "tasks");
    await t.admin("POST", "/api/v1/tasks", { status: "seed", prio: 0, label: "seed" });
    const s = await adminStream([{ collection: "tasks", filter: ["status:eq:open", "prio:gte:2"] }]);
    await t.admin("POST", "/api/v1/tasks", { status: "open", prio: 1, label: "low" });
    const hit = await t.admin("POST", "/api/v1/tasks", { status: "open", prio: 5, label: "hit" });
    await t.admin("POST", "/api/v1/tasks", { status: "done", prio: 5, label: "done" });
    await t.admin("PATCH", `/api/v1/tasks/${hit.body._id}`, { status: "done" });
    const low = await t.admin("POST", "/api/v1/tasks", { status: "open", prio: 0, label: "raised" });
    await t.admin("PATCH", `/api/v1/tasks/${low.body._id}`, { prio: 2 });
    await s.waitChanges(2);
    expect(s.changes().map((e) => [e.event, e.data.record.label])).toEqual([
      ["create", "hit"],
      ["update", "raised"],
    ]);
  });

  test("filter operators like, in, ne and null follow the list's meaning", async () => {
    await createCollection(t, "things");
    await t.admin("POST", "/api/v1/things", { name: "seed", tag: "seed", flag: false });
    const s = await adminStream([
      { collection: "things", filter: "name:like:ell" },
      { collection: "things", filter: "filter=tag:in:a,null&filter[flag][eq]=true" },
    ]);
    await t.admin("POST", "/api/v1/things", { name: "HELLO", tag: "z", flag: false });
    await t.admin("POST", "/api/v1/things", { name: "x", tag: "a", flag: true });
    await t.admin("POST", "/api/v1/things", { name: "y", flag: true });
    await t.admin("POST", "/api/v1/things", { name: "z", tag: "b", flag: true });
    await s.waitChanges(3);
    expect(s.changes().map((e) => e.data.record.name)).toEqual(["HELLO", "x", "y"]);
  });

  test("like ignores the case of ASCII letters only, as the list does", async () => {
    await createCollection(t, "words");
    await t.admin("POST", "/api/v1/words", { name: "seed" });
    const s = await adminStream([{ collection: "words", filter: "name:like:é" }]);
    for (const name of ["CAFÉ", "café", "ÉTÉ"]) await t.admin("POST", "/api/v1/words", { name });
    await s.waitChanges(1);
    const listed = await t.admin("GET", `/api/v1/words?filter=${encodeURIComponent("name:like:é")}`);
    expect(listed.body.items.map((r: { name: string }) => r.name)).toEqual(["café"]);
    const marker = await t.admin("POST", "/api/v1/words", { name: "é" });
    await s.next((e) => e.data?.record?._id === marker.body._id);
    expect(s.changes().map((e) => e.data.record.name)).toEqual(["café", "é"]);
  });
});
