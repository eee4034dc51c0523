import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, registerUser } from "../helpers/app.ts";
import { createLiveApp, followBare, syncStreams, type LiveApp } from "../helpers/sse.ts";

// CONTRACT §12: a path through `one` relations reads its target only where the caller may read it; a hidden
// target is null, as a missing or soft-deleted one. Rooms here are readable when open or by their owner; each
// message collection's rule goes through its room.

const C = "/api/v1/admin/collections";
let t: LiveApp;
let alice: { token: string; id: string };
let bob: { token: string; id: string };
const rooms: Record<string, string> = {};

async function messages(name: string, rules: Record<string, unknown>): Promise<void> {
  expect((await t.admin("POST", C, { name, fields: [{ name: "text", type: "text" }], rules: { create: "true" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: name, from_field: "room", to_col: "pt_rooms", type: "one" })).status).toBe(201);
  expect((await t.admin("PUT", `${C}/${name}/rules`, { rules })).status).toBe(200);
  // "none" points nowhere.
  for (const room of ["closed", "open", "none"]) expect((await t.admin("POST", `/api/v1/${name}`, { text: room, ...(rooms[room] ? { room: rooms[room] } : {}) })).status).toBe(201);
}

const texts = (res: { body: { items: { text: string }[] } }) => res.body.items.map((r) => r.text).sort();
const texts2 = (res: { body: { items: { title: string }[] } }) => res.body.items.map((r) => r.title).sort();

beforeAll(async () => {
  t = createLiveApp();
  alice = await registerUser(t, "alice-paths@example.com");
  bob = await registerUser(t, "bob-paths@example.com");
  const fields = [{ name: "name", type: "text" }, { name: "owner", type: "text" }, { name: "open", type: "boolean" }];
  expect((await t.admin("POST", C, { name: "pt_rooms", fields, rules: { read: "open = true || owner = @auth.id" } })).status).toBe(201);
  rooms.closed = (await t.admin("POST", "/api/v1/pt_rooms", { name: "closed", owner: alice.id, open: false })).body._id;
  rooms.open = (await t.admin("POST", "/api/v1/pt_rooms", { name: "open", owner: alice.id, open: true })).body._id;
  await messages("pt_msgs", { read: "room.name != null" });
  await messages("pt_nulls", { read: "room.name = null" });
  await messages("pt_owned", { read: "room.owner = @auth.id" });
  expect((await t.admin("POST", C, { name: "markers", rules: { read: "public" } })).status).toBe(201);
}, 60_000);
afterAll(() => t.stop());

describe("a path's target that the caller may not read is null", () => {
  test("lists, counts and gets: the owner reads through her closed room, others only through the open one", async () => {
    for (const [who, token, seen] of [["alice", alice.token, ["closed", "open"]], ["bob", bob.token, ["open"]], ["anonymous", null, ["open"]]] as const) {
      const list = await t.req("GET", "/api/v1/pt_msgs", { token });
      expect({ who, status: list.status, texts: texts(list), total: list.body.total }).toEqual({ who, status: 200, texts: [...seen], total: seen.length });
      expect((await t.req("GET", "/api/v1/pt_msgs/count", { token })).body).toEqual({ total: seen.length });
      // `= null` holds where the target is hidden or missing.
      const nulls = await t.req("GET", "/api/v1/pt_nulls", { token });
      expect({ who, texts: texts(nulls) }).toEqual({ who, texts: ["closed", "open", "none"].filter((x) => !seen.includes(x as never)).sort() });
    }
    const closed = (await t.admin("GET", "/api/v1/pt_msgs?filter=text:eq:closed")).body.items[0]._id;
    expect((await t.req("GET", `/api/v1/pt_msgs/${closed}`, { token: bob.token })).status).toBe(404);
    expect((await t.req("GET", `/api/v1/pt_msgs/${closed}`, { token: alice.token })).status).toBe(200);
    expect((await t.admin("GET", "/api/v1/pt_msgs")).body.total).toBe(3);
  });

  test("a rule on the caller's id through a target: the owner only, while the target stays hers to read", async () => {
    expect(texts(await t.req("GET", "/api/v1/pt_owned", { token: alice.token }))).toEqual(["closed", "open"]);
    expect(texts(await t.req("GET", "/api/v1/pt_owned", { token: bob.token }))).toEqual([]);
  });

  test("writes: an update rule through a hidden target refuses, through a readable one passes", async () => {
    expect((await t.admin("POST", C, { name: "pt_posts", fields: [{ name: "text", type: "text" }], rules: { read: "true", create: "true" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "pt_posts", from_field: "room", to_col: "pt_rooms", type: "one" })).status).toBe(201);
    expect((await t.admin("PUT", `${C}/pt_posts/rules`, { rules: { update: "room.name != null" } })).status).toBe(200);
    const inClosed = (await t.req("POST", "/api/v1/pt_posts", { token: alice.token, body: { text: "a", room: rooms.closed } })).body._id;
    const inOpen = (await t.req("POST", "/api/v1/pt_posts", { token: alice.token, body: { text: "b", room: rooms.open } })).body._id;
    // Bob may read the post but not its closed room: the room's name is null to his rule.
    expect((await t.req("PATCH", `/api/v1/pt_posts/${inClosed}`, { token: bob.token, body: { text: "x" } })).status).toBe(403);
    expect((await t.req("PATCH", `/api/v1/pt_posts/${inOpen}`, { token: bob.token, body: { text: "x" } })).status).toBe(200);
    expect((await t.req("PATCH", `/api/v1/pt_posts/${inClosed}`, { token: alice.token, body: { text: "y" } })).status).toBe(200);
  });

  test("realtime: an event reaches the streams whose reader may read its room", async () => {
    // Collections of this test's own: the others read theirs in any order.
    await messages("pt_live", { read: "room.name != null" });
    await messages("pt_live_owned", { read: "room.owner = @auth.id" });
    const topics = ["pt_live", "pt_live_owned", "markers"];
    const streams = { alice: await followBare(t, topics, alice.token), bob: await followBare(t, topics, bob.token), admin: await followBare(t, ["pt_live", "markers"], ADMIN_SECRET) };
    for (const room of ["closed", "open"]) {
      expect((await t.admin("POST", "/api/v1/pt_live", { text: `live ${room}`, room: rooms[room] })).status).toBe(201);
      expect((await t.admin("POST", "/api/v1/pt_live_owned", { text: `own ${room}`, room: rooms[room] })).status).toBe(201);
    }
    await syncStreams(t, Object.values(streams));
    const seen = (s: (typeof streams)["bob"]) => s.changes().filter((e) => e.data.collection !== "markers").map((e) => e.data.record.text);
    expect(seen(streams.alice)).toEqual(["live closed", "own closed", "live open", "own open"]);
    expect(seen(streams.bob)).toEqual(["live open"]);
    expect(seen(streams.admin)).toEqual(["live closed", "live open"]);
  });

  test("an anonymous caller refused through a target rule that reads @auth is told to sign in (401)", async () => {
    expect((await t.admin("POST", C, { name: "pt_private", fields: [{ name: "name", type: "text" }], rules: { read: "owner" } })).status).toBe(201);
    expect((await t.admin("POST", C, { name: "pt_notes", fields: [{ name: "text", type: "text" }], rules: { create: "true" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "pt_notes", from_field: "box", to_col: "pt_private", type: "one" })).status).toBe(201);
    expect((await t.admin("PUT", `${C}/pt_notes/rules`, { rules: { read: "box.name = 'x'" } })).status).toBe(200);
    const box = (await t.req("POST", "/api/v1/pt_private", { token: alice.token, body: { name: "x" } })).body._id;
    expect((await t.admin("POST", "/api/v1/pt_notes", { text: "n", box })).status).toBe(201);
    expect(await t.req("GET", "/api/v1/pt_notes")).toMatchObject({ status: 401 });
    expect(texts(await t.req("GET", "/api/v1/pt_notes", { token: bob.token }))).toEqual([]);
    expect(texts(await t.req("GET", "/api/v1/pt_notes", { token: alice.token }))).toEqual(["n"]);
  });

  test("a rule that leads back into its own collection is decided, the path back counting as hidden", async () => {
    const fields = [{ name: "text", type: "text" }, { name: "author", type: "text" }];
    expect((await t.admin("POST", C, { name: "pt_comments", fields, rules: { create: "true" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "pt_comments", from_field: "parent", to_col: "pt_comments", type: "one" })).status).toBe(201);
    expect((await t.admin("PUT", `${C}/pt_comments/rules`, { rules: { read: "author = @auth.id || parent.author = @auth.id" } })).status).toBe(200);
    const top = (await t.admin("POST", "/api/v1/pt_comments", { text: "top", author: alice.id })).body._id;
    const reply = (await t.admin("POST", "/api/v1/pt_comments", { text: "reply", author: bob.id, parent: top })).body._id;
    expect((await t.admin("POST", "/api/v1/pt_comments", { text: "deeper", author: bob.id, parent: reply })).status).toBe(201);
    expect(texts(await t.req("GET", "/api/v1/pt_comments", { token: alice.token }))).toEqual(["reply", "top"]);
    expect(texts(await t.req("GET", "/api/v1/pt_comments", { token: bob.token }))).toEqual(["deeper", "reply"]);
  });

  describe("rules whose targets' rules lead back to them", () => {
    // ca reads through cb and cc, cb through ca; only cc reads the caller (Alice alone may read it).
    beforeAll(async () => {
      for (const name of ["pt_ca", "pt_cb", "pt_cc"]) expect((await t.admin("POST", C, { name, fields: [{ name: "title", type: "text" }], rules: { create: "true" } })).status).toBe(201);
      for (const [from, field, to] of [["pt_ca", "b", "pt_cb"], ["pt_ca", "c", "pt_cc"], ["pt_cb", "a", "pt_ca"]])
        expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: from, from_field: field, to_col: to, type: "one" })).status).toBe(201);
      expect((await t.admin("PUT", `${C}/pt_cc/rules`, { rules: { read: "@auth.email = 'alice-paths@example.com'" } })).status).toBe(200);
      expect((await t.admin("PUT", `${C}/pt_cb/rules`, { rules: { read: "a.title != null" } })).status).toBe(200);
      expect((await t.admin("PUT", `${C}/pt_ca/rules`, { rules: { read: "b.title != null || c.title != null" } })).status).toBe(200);
    });

    test("an anonymous caller refused through any of them is told to sign in, whichever was asked first", async () => {
      for (const path of ["/api/v1/pt_ca", "/api/v1/pt_cb", "/api/v1/pt_cc"]) expect({ path, status: (await t.req("GET", path)).status }).toEqual({ path, status: 401 });
    });

    test("realtime: an event of each reaches the reader whose access goes through the caller-reading rule, and the admin", async () => {
      const c1 = (await t.admin("POST", "/api/v1/pt_cc", { title: "c1" })).body._id;
      const alice2 = await followBare(t, ["pt_ca", "pt_cb", "markers"], alice.token);
      const bob2 = await followBare(t, ["pt_ca", "pt_cb", "markers"], bob.token);
      const admin2 = await followBare(t, ["pt_ca", "pt_cb", "markers"], ADMIN_SECRET);
      const a2 = (await t.admin("POST", "/api/v1/pt_ca", { title: "a2", c: c1 })).body._id;
      expect((await t.admin("POST", "/api/v1/pt_cb", { title: "b2", a: a2 })).status).toBe(201);
      await syncStreams(t, [alice2, bob2, admin2]);
      const seen = (s: typeof alice2) => s.changes().filter((e) => e.data.collection !== "markers").map((e) => e.data.record.title);
      expect(seen(alice2)).toEqual(["a2", "b2"]);
      expect(seen(bob2)).toEqual([]);
      expect(seen(admin2)).toEqual(["a2", "b2"]);
      expect(texts2(await t.req("GET", "/api/v1/pt_cb", { token: alice.token }))).toEqual(["b2"]);
    });
  });

  test("a rule that would read more than 16 target rules holds for no record, where a path read as null could grant", async () => {
    const fields = [{ name: "name", type: "text" }, { name: "open", type: "boolean" }, { name: "banned", type: "boolean" }];
    expect((await t.admin("POST", C, { name: "pt_caprooms", fields, rules: { read: "open = true" } })).status).toBe(201);
    expect((await t.admin("POST", C, { name: "pt_capmsgs", fields: [{ name: "text", type: "text" }], rules: { create: "true" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "pt_capmsgs", from_field: "room", to_col: "pt_caprooms", type: "one" })).status).toBe(201);
    for (const [text, open, banned] of [["closed", false, false], ["open", true, false], ["banned", true, true]] as const) {
      const room = (await t.admin("POST", "/api/v1/pt_caprooms", { name: "a", open, banned })).body._id;
      expect((await t.admin("POST", "/api/v1/pt_capmsgs", { text, room })).status).toBe(201);
    }
    const names = (n: number) => Array.from({ length: n }, (_, i) => `room.name = '${String.fromCharCode(97 + i)}'`).join(" || ");
    // 15 names and the ban: 16 paths, each through the rooms' read rule.
    expect((await t.admin("PUT", `${C}/pt_capmsgs/rules`, { rules: { read: `(${names(15)}) && room.banned != true` } })).status).toBe(200);
    expect(texts(await t.req("GET", "/api/v1/pt_capmsgs", { token: bob.token }))).toEqual(["open"]);
    // One more path: refused for everyone but admins rather than read with a target as null (`!= true` would pass).
    expect((await t.admin("PUT", `${C}/pt_capmsgs/rules`, { rules: { read: `(${names(16)}) && room.banned != true` } })).status).toBe(200);
    expect((await t.req("GET", "/api/v1/pt_capmsgs", { token: bob.token })).status).toBe(403);
    expect((await t.req("GET", "/api/v1/pt_capmsgs")).status).toBe(403);
    expect((await t.admin("GET", "/api/v1/pt_capmsgs")).body.total).toBe(3);
  });
});
