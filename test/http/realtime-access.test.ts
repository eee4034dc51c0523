import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createCollection, createTestApp, registerUser } from "../helpers/app.ts";
import { createLiveApp, type LiveApp, type SseClient } from "../helpers/sse.ts";

let t: LiveApp;
beforeEach(() => {
  t = createLiveApp();
});
afterEach(() => t.stop());

/** A browser-style stream: opened without headers, then bound to `token` (or anonymous) by the POST. */
async function follow(topics: unknown[], token?: string): Promise<SseClient> {
  const s = await t.stream();
  const res = await t.subscribe(await s.clientId(), topics, token);
  expect(res.status).toBe(200);
  return s;
}

/** Writes a marker record (public collection) that every stream follows: once it arrives, everything before it did too. */
async function marker(streams: SseClient[]) {
  const m = await t.admin("POST", "/api/v1/markers", { at: Date.now() });
  for (const s of streams) await s.next((e) => e.data?.record?._id === m.body._id);
}

const ids = (s: SseClient, col: string) => s.changes().filter((e) => e.data.collection === col).map((e) => e.data.record.title);

describe("each event is checked against the subscriber's read rule", () => {
  beforeEach(() => createCollection(t, "markers"));

  test("owner read rule: each user sees only their own records; admin sees all; anonymous none", async () => {
    await createCollection(t, "notes", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const streams = {
      alice: await follow(["notes", "markers"], alice.token),
      bob: await follow(["notes", "markers"], bob.token),
      admin: await follow(["notes", "markers"], ADMIN_SECRET),
      anon: await follow(["notes", "markers"]),
    };
    const a = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { title: "alice 1" } });
    await t.req("POST", "/api/v1/notes", { token: bob.token, body: { title: "bob 1" } });
    await t.req("PATCH", `/api/v1/notes/${a.body._id}`, { token: alice.token, body: { title: "alice 1b" } });
    await t.req("DELETE", `/api/v1/notes/${a.body._id}`, { token: alice.token });
    await marker(Object.values(streams));
    expect(ids(streams.alice, "notes")).toEqual(["alice 1", "alice 1b", "alice 1b"]);
    expect(ids(streams.bob, "notes")).toEqual(["bob 1"]);
    expect(ids(streams.admin, "notes")).toEqual(["alice 1", "bob 1", "alice 1b", "alice 1b"]);
    expect(ids(streams.anon, "notes")).toEqual([]);
  });

  test("role rule: only holders of the role get events; a disabled rule sends nothing to anyone but admin", async () => {
    await createCollection(t, "staff", { read: { role: "editor" } });
    await createCollection(t, "locked", { read: "disabled" });
    const ed = await registerUser(t, "ed@example.com");
    const plain = await registerUser(t, "plain@example.com");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ed.id}`, { roles: ["editor"] })).status).toBe(200);
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "ed@example.com", password: "password123" } });
    const topics = ["staff", "locked", "markers"];
    const editor = await follow(topics, login.body.access_token);
    const user = await follow(topics, plain.token);
    const admin = await follow(topics, ADMIN_SECRET);
    await t.admin("POST", "/api/v1/staff", { title: "memo" });
    await t.admin("POST", "/api/v1/locked", { title: "secret" });
    await marker([editor, user, admin]);
    expect(ids(editor, "staff")).toEqual(["memo"]);
    expect(ids(user, "staff")).toEqual([]);
    expect([...ids(editor, "locked"), ...ids(user, "locked")]).toEqual([]);
    expect(ids(admin, "locked")).toEqual(["secret"]);
  });

  test("authenticated read rule: a signed-in stream gets events, an anonymous one does not", async () => {
    await createCollection(t, "members", { read: "authenticated" });
    const u = await registerUser(t, "member@example.com");
    const signedIn = await follow(["members", "markers"], u.token);
    const viaHeader = await t.stream({ token: u.token, query: "?subscribe=members,markers" });
    const anon = await follow(["members", "markers"]);
    await t.admin("POST", "/api/v1/members", { title: "hello" });
    await marker([signedIn, viaHeader, anon]);
    expect(ids(signedIn, "members")).toEqual(["hello"]);
    expect(ids(viaHeader, "members")).toEqual(["hello"]);
    expect(ids(anon, "members")).toEqual([]);
  });

  test("the rule is read at delivery: a rule changed after subscribing applies to the next event", async () => {
    await createCollection(t, "docs", { read: "public" });
    const anon = await follow(["docs", "markers"]);
    await t.admin("POST", "/api/v1/docs", { title: "open" });
    await marker([anon]);
    expect((await t.admin("PUT", "/api/v1/admin/collections/docs/rules", { rules: { read: "authenticated" } })).status).toBe(200);
    await t.admin("POST", "/api/v1/docs", { title: "closed" });
    await marker([anon]);
    expect(ids(anon, "docs")).toEqual(["open"]);
  });

  test("a record's `many` field lists, for each subscriber, only the related records that subscriber may read", async () => {
    await createCollection(t, "authors");
    await createCollection(t, "drafts", { read: "owner", create: "authenticated" });
    const one = await t.admin("POST", "/api/v1/admin/relations", { from_col: "drafts", from_field: "author", to_col: "authors", type: "one" });
    expect(one.status).toBe(201);
    const many = await t.admin("POST", "/api/v1/admin/relations", { from_col: "authors", from_field: "drafts", to_col: "drafts", type: "many", to_field: "author" });
    expect(many.status).toBe(201);
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const author = await t.admin("POST", "/api/v1/authors", { title: "writer" });
    const a = await t.req("POST", "/api/v1/drafts", { token: alice.token, body: { author: author.body._id } });
    const b = await t.req("POST", "/api/v1/drafts", { token: bob.token, body: { author: author.body._id } });
    const streams = { alice: await follow(["authors", "markers"], alice.token), admin: await follow(["authors", "markers"], ADMIN_SECRET) };
    await t.admin("PATCH", `/api/v1/authors/${author.body._id}`, { title: "writer!" });
    await marker(Object.values(streams));
    const seen = (s: SseClient) => s.changes().find((e) => e.data.collection === "authors")!.data.record.drafts;
    expect(seen(streams.alice)).toEqual([a.body._id]);
    expect([...seen(streams.admin)].sort()).toEqual([a.body._id, b.body._id].sort());
    // And as that subscriber's own read returns it.
    const read = await t.req("GET", `/api/v1/authors/${author.body._id}`, { token: alice.token });
    expect(streams.alice.changes().find((e) => e.data.collection === "authors")!.data.record).toEqual(read.body);
  });
});

describe("a rule changed by another process", () => {
  beforeEach(() => createCollection(t, "markers"));

  test("holds for the next event delivered: a read rule another node or the CLI disabled sends nothing more", async () => {
    await createCollection(t, "posts", { read: "public", create: "public" });
    const anon = await follow(["posts", "markers"]);
    expect((await t.req("POST", "/api/v1/posts", { body: { title: "before" } })).status).toBe(201);
    await marker([anon]);
    // Another process on the same database (another node, the CLI) disables reads.
    const other = createTestApp({ dir: t.dir });
    try {
      const changed = await other.admin("PUT", "/api/v1/admin/collections/posts/rules", { rules: { read: "disabled", create: "public" } });
      expect(changed.status).toBe(200);
    } finally {
      await other.close();
    }
    expect((await t.req("POST", "/api/v1/posts", { body: { title: "after" } })).status).toBe(201);
    await marker([anon]);
    expect(ids(anon, "posts")).toEqual(["before"]);
  });

  test("so do a user's roles and metadata another process changed: each holds for the next event", async () => {
    await createCollection(t, "staff", { read: "@auth.roles ?= 'editor' || @auth.metadata.plan = 'pro'" });
    const ed = await registerUser(t, "ed@example.com");
    const s = await follow(["staff", "markers"], ed.token);
    const elsewhere = async (change: Record<string, unknown>) => {
      const other = createTestApp({ dir: t.dir });
      try {
        expect((await other.admin("PATCH", `/api/v1/admin/users/${ed.id}`, change)).status).toBe(200);
      } finally {
        await other.close();
      }
    };
    const post = async (title: string) => {
      expect((await t.admin("POST", "/api/v1/staff", { title })).status).toBe(201);
      await marker([s]);
    };
    await post("none");
    await elsewhere({ roles: ["editor"] });
    await post("editor");
    await post("editor again");
    await elsewhere({ roles: [], metadata: { plan: "pro" } });
    await post("pro");
    await elsewhere({ metadata: { plan: "free" } });
    await post("free");
    expect(ids(s, "staff")).toEqual(["editor", "editor again", "pro"]);
  });
});
