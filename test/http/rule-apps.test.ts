import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, registerUser } from "../helpers/app.ts";
import { createLiveApp, followBare, syncStreams, type LiveApp, type SseClient } from "../helpers/sse.ts";

// Expression rules (CONTRACT §12) applied on every path, told as four small apps: a blog with drafts and an
// editor role, a team chat whose rooms are read by their members, a shop, and shared todo lists. Each table
// states, per caller, which records the rule lets through; every read path must agree with it: get, list
// (pages full, total exact, cursors), count, aggregate, search, expand, realtime. Writes assert allowed and
// denied callers (403 where the record is readable, 404 where it is not).

const C = "/api/v1/admin/collections";
let t: LiveApp;
type User = { token: string; id: string };
const u: Record<string, User> = {};
/** A caller: a user's name, "anon", or "admin". */
type Caller = string;
const tokenOf = (who: Caller) => (who === "anon" ? null : who === "admin" ? ADMIN_SECRET : u[who]!.token);
const as = (who: Caller, method: string, path: string, body?: unknown) => t.req(method, path, { token: tokenOf(who), body });
const ok = (res: { status: number; text?: string }, status: number) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
};

beforeAll(async () => {
  t = createLiveApp();
  for (const name of ["alice", "bob", "carol", "dave", "erin"]) u[name] = await registerUser(t, `${name}@example.com`);
  ok(await t.admin("PATCH", `/api/v1/admin/users/${u.carol!.id}`, { roles: ["editor"] }), 200);
  ok(await t.admin("PATCH", `/api/v1/admin/users/${u.dave!.id}`, { metadata: { staff: true, team: "red" } }), 200);
  ok(await t.admin("POST", C, { name: "markers", rules: { read: "public" } }), 201);
}, 60_000);
afterAll(() => t.stop());

/** Every record `who` can see in `col` through each read path, which must all agree; returns the ids (sorted). */
async function seenEverywhere(who: Caller, col: string, adminIds: string[], opts: { search?: string } = {}): Promise<string[]> {
  // List in pages of 2: every page but the last is full; total counts what the pages hold.
  const paged: string[] = [];
  let total: number | null = null;
  for (let page = 1; page < 100; page++) {
    const res = await as(who, "GET", `/api/v1/${col}?limit=2&page=${page}`);
    ok(res, 200);
    total = res.body.total;
    paged.push(...res.body.items.map((r: { _id: string }) => r._id));
    if (res.body.items.length < 2) break;
  }
  expect(total).toBe(paged.length);
  // Cursors give the same records.
  const cursored: string[] = [];
  let after: string | null = null;
  for (let i = 0; i < 100; i++) {
    const res = await as(who, "GET", `/api/v1/${col}?limit=2${after ? `&after=${after}` : ""}`);
    ok(res, 200);
    cursored.push(...res.body.items.map((r: { _id: string }) => r._id));
    after = res.body.next_cursor;
    if (!after) break;
    expect(res.body.items.length).toBe(2);
  }
  expect(cursored).toEqual(paged);
  expect((await as(who, "GET", `/api/v1/${col}/count`)).body).toEqual({ total: paged.length });
  expect((await as(who, "GET", `/api/v1/${col}/aggregate?fn=count`)).body).toEqual({ value: paged.length });
  // Get agrees record by record: 200 for those listed, 404 for the others.
  for (const id of adminIds) {
    const res = await as(who, "GET", `/api/v1/${col}/${id}`);
    expect(`${who} GET ${col}/${id}: ${res.status}`).toBe(`${who} GET ${col}/${id}: ${paged.includes(id) ? 200 : 404}`);
  }
  if (opts.search) {
    const res = await as(who, "GET", `/api/v1/${col}?search=${opts.search}&limit=500`);
    ok(res, 200);
    expect(res.body.items.map((r: { _id: string }) => r._id).sort()).toEqual([...paged].sort());
    expect(res.body.total).toBe(paged.length);
  }
  return [...paged].sort();
}

const idsOf = (rows: { _id: string }[]) => rows.map((r) => r._id).sort();

describe("a blog: drafts for their author, published for all, an editor role (field compare, @auth.id, @auth.roles, @request.body)", () => {
  const rec: Record<string, string> = {};
  const all = () => Object.values(rec);
  beforeAll(async () => {
    ok(
      await t.admin("POST", C, {
        name: "posts",
        fields: [
          { name: "title", type: "text" },
          { name: "status", type: "text" },
        ],
        rules: {
          read: "status = 'published' || _owner_id = @auth.id || @auth.roles ?= 'editor'",
          create: "@request.body.status = 'draft' || @auth.roles ?= 'editor'",
          update: "_owner_id = @auth.id || @auth.roles ?= 'editor'",
          delete: "_owner_id = @auth.id",
        },
      }),
      201,
    );
    ok(await t.admin("POST", `${C}/posts/fts`), 201);
    for (let i = 0; i < 5; i++) rec[`pub${i}`] = (await t.admin("POST", "/api/v1/posts", { title: `post pub ${i}`, status: "published" })).body._id;
    rec.adminDraft = (await t.admin("POST", "/api/v1/posts", { title: "post admin draft", status: "draft" })).body._id;
    for (let i = 0; i < 3; i++) {
      const res = await as("alice", "POST", "/api/v1/posts", { title: `post alice ${i}`, status: "draft" });
      ok(res, 201);
      rec[`alice${i}`] = res.body._id;
    }
    const bobs = await as("bob", "POST", "/api/v1/posts", { title: "post bob", status: "draft" });
    ok(bobs, 201);
    rec.bob = bobs.body._id;
  }, 60_000);

  test("each caller sees exactly their records on every read path", async () => {
    const pub = [0, 1, 2, 3, 4].map((i) => rec[`pub${i}`]!);
    const want: Record<Caller, string[]> = {
      anon: pub,
      alice: [...pub, rec.alice0!, rec.alice1!, rec.alice2!],
      bob: [...pub, rec.bob!],
      carol: all(),
      admin: all(),
    };
    for (const [who, ids] of Object.entries(want)) expect(`${who}: ${await seenEverywhere(who, "posts", all(), { search: "post" })}`).toBe(`${who}: ${[...ids].sort()}`);
  });

  test("a filter cannot widen the rule", async () => {
    const res = await as("bob", "GET", "/api/v1/posts?filter=status:eq:draft");
    expect(idsOf(res.body.items)).toEqual([rec.bob!]);
    expect(res.body.total).toBe(1);
    const or = await as("anon", "GET", `/api/v1/posts?filter=_owner_id:eq:${u.alice!.id}`);
    expect(or.body).toEqual({ items: [], next_cursor: null, total: 0 });
  });

  test("create: @request.body and the role decide; a denied create is 403 and writes nothing", async () => {
    const denied = await as("alice", "POST", "/api/v1/posts", { title: "post sneaky", status: "published" });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("forbidden");
    expect((await as("anon", "POST", "/api/v1/posts", { title: "post anon", status: "published" })).status).toBe(401);
    expect((await as("carol", "POST", "/api/v1/posts", { title: "post by editor", status: "published" })).status).toBe(201);
    const bulk = await as("alice", "POST", "/api/v1/posts/bulk", [
      { title: "post ok", status: "draft" },
      { title: "post no", status: "published" },
    ]);
    expect(bulk.status).toBe(403);
    expect(bulk.body.index).toBe(1);
    expect((await t.admin("GET", "/api/v1/posts?filter=title:eq:post%20ok")).body.total).toBe(0);
    expect((await t.admin("GET", "/api/v1/posts?filter=title:eq:post%20sneaky")).body.total).toBe(0);
  });

  test("update and delete: the author or an editor; a readable record denied is 403, a hidden one 404", async () => {
    expect((await as("bob", "PATCH", `/api/v1/posts/${rec.pub0}`, { title: "x" })).status).toBe(403);
    expect((await as("bob", "PATCH", `/api/v1/posts/${rec.alice0}`, { title: "x" })).status).toBe(404);
    expect((await as("alice", "PATCH", `/api/v1/posts/${rec.alice0}`, { status: "published" })).status).toBe(200);
    expect((await as("carol", "PATCH", `/api/v1/posts/${rec.alice1}`, { title: "post alice 1 edited" })).status).toBe(200);
    // Now published, bob reads it.
    expect((await as("bob", "GET", `/api/v1/posts/${rec.alice0}`)).status).toBe(200);
    expect((await as("carol", "DELETE", `/api/v1/posts/${rec.alice2}`)).status).toBe(403);
    expect((await as("bob", "DELETE", `/api/v1/posts/${rec.alice2}`)).status).toBe(404);
    const batch = await as("bob", "POST", "/api/v1/posts/batch", { operations: [{ op: "update", id: rec.pub1, data: { title: "y" } }] });
    expect(batch.status).toBe(400);
    expect(batch.body.code).toBe("batch_failed");
    expect((await as("alice", "DELETE", `/api/v1/posts/${rec.alice2}`)).status).toBe(200);
    // include_deleted shows the deleted draft to its author (the delete rule holds), to no one else.
    const mine = await as("alice", "GET", `/api/v1/posts?include_deleted=true&filter=_id:eq:${rec.alice2}`);
    expect(mine.body.total).toBe(1);
    expect((await as("alice", "GET", `/api/v1/posts/${rec.alice2}?include_deleted=true`)).status).toBe(200);
    expect((await as("carol", "GET", `/api/v1/posts?include_deleted=true&filter=_id:eq:${rec.alice2}`)).body.total).toBe(0);
    expect((await as("carol", "GET", `/api/v1/posts/${rec.alice2}?include_deleted=true`)).status).toBe(404);
    expect((await as("carol", "POST", `/api/v1/posts/${rec.alice2}/restore`)).status).toBe(403);
    expect((await as("alice", "POST", `/api/v1/posts/${rec.alice2}/restore`)).status).toBe(200);
  });

  test("a role granted through the admin API applies to an existing token at its next request, and removed, is gone", async () => {
    const before = await as("erin", "GET", "/api/v1/posts/count");
    ok(await t.admin("PATCH", `/api/v1/admin/users/${u.erin!.id}`, { roles: ["editor"] }), 200);
    const during = await as("erin", "GET", "/api/v1/posts/count");
    expect(during.body.total).toBeGreaterThan(before.body.total);
    expect(during.body).toEqual((await t.admin("GET", "/api/v1/posts/count")).body);
    ok(await t.admin("PATCH", `/api/v1/admin/users/${u.erin!.id}`, { roles: [] }), 200);
    expect((await as("erin", "GET", "/api/v1/posts/count")).body).toEqual(before.body);
  });

  test("1,000 roles on one user still work", async () => {
    const roles = Array.from({ length: 1000 }, (_, i) => `r${i}`);
    ok(await t.admin("PATCH", `/api/v1/admin/users/${u.erin!.id}`, { roles: [...roles, "editor"] }), 200);
    expect((await as("erin", "GET", "/api/v1/posts/count")).body).toEqual((await t.admin("GET", "/api/v1/posts/count")).body);
    ok(await t.admin("PATCH", `/api/v1/admin/users/${u.erin!.id}`, { roles }), 200);
    // Without "editor" among them she reads what anonymous callers read (she wrote nothing).
    expect((await as("erin", "GET", "/api/v1/posts/count")).body).toEqual((await as("anon", "GET", "/api/v1/posts/count")).body);
  });

  test("realtime: each stream gets the events its reader may read", async () => {
    const streams: Record<string, SseClient> = {};
    for (const who of ["anon", "alice", "bob", "carol"]) streams[who] = await followBare(t, ["posts", "markers"], tokenOf(who) ?? undefined);
    ok(await as("alice", "POST", "/api/v1/posts", { title: "post live draft", status: "draft" }), 201);
    ok(await t.admin("POST", "/api/v1/posts", { title: "post live pub", status: "published" }), 201);
    await syncStreams(t, Object.values(streams));
    const got = (who: string) => streams[who]!.changes().filter((e) => e.data.collection === "posts").map((e) => e.data.record.title);
    expect(got("anon")).toEqual(["post live pub"]);
    expect(got("bob")).toEqual(["post live pub"]);
    expect(got("alice")).toEqual(["post live draft", "post live pub"]);
    expect(got("carol")).toEqual(["post live draft", "post live pub"]);
  });
});

describe("a team chat: rooms and messages read by members (@exists, relation paths)", () => {
  const room: Record<string, string> = {};
  const msg: Record<string, string> = {};
  const member: Record<string, string> = {};
  beforeAll(async () => {
    ok(await t.admin("POST", C, { name: "rooms", fields: [{ name: "name", type: "text" }, { name: "owner", type: "text" }] }), 201);
    ok(await t.admin("POST", C, { name: "members", fields: [{ name: "user", type: "text" }] }), 201);
    ok(await t.admin("POST", C, { name: "messages", fields: [{ name: "text", type: "text" }] }), 201);
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "members", from_field: "room", to_col: "rooms", type: "one", on_delete: "cascade" }), 201);
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "messages", from_field: "room", to_col: "rooms", type: "one", on_delete: "cascade" }), 201);
    ok(
      await t.admin("PUT", `${C}/rooms/rules`, {
        rules: { read: "owner = @auth.id || @exists(members, room = @record._id && user = @auth.id)", create: "disabled", update: "owner = @auth.id", delete: "disabled" },
      }),
      200,
    );
    ok(await t.admin("PUT", `${C}/members/rules`, { rules: { read: "user = @auth.id || room.owner = @auth.id", create: "room.owner = @auth.id", update: "disabled", delete: "room.owner = @auth.id" } }), 200);
    ok(
      await t.admin("PUT", `${C}/messages/rules`, {
        rules: {
          read: "@exists(members, room = @record.room && user = @auth.id)",
          create: "@exists(members, room = @request.body.room && user = @auth.id)",
          update: "_owner_id = @auth.id || room.owner = @auth.id",
          delete: "room.owner = @auth.id",
        },
      }),
      200,
    );
    room.general = (await t.admin("POST", "/api/v1/rooms", { name: "general", owner: u.alice!.id })).body._id;
    room.secret = (await t.admin("POST", "/api/v1/rooms", { name: "secret", owner: u.alice!.id })).body._id;
    // Alice (owner of both) adds members through her rule on members (a relation path in a create rule).
    for (const [key, r, who] of [["ag", "general", "alice"], ["bg", "general", "bob"], ["as", "secret", "alice"]] as const) {
      const res = await as("alice", "POST", "/api/v1/members", { room: room[r], user: u[who]!.id });
      ok(res, 201);
      member[key] = res.body._id;
    }
    expect((await as("bob", "POST", "/api/v1/members", { room: room.secret, user: u.bob!.id })).status).toBe(403);
    for (const [key, r, who] of [["g1", "general", "alice"], ["g2", "general", "bob"], ["g3", "general", "bob"], ["s1", "secret", "alice"]] as const) {
      const res = await as(who, "POST", "/api/v1/messages", { room: room[r], text: `${key} hello` });
      ok(res, 201);
      msg[key] = res.body._id;
    }
  }, 60_000);

  test("members read their rooms' messages and rooms; others nothing, on every read path", async () => {
    const all = Object.values(msg);
    expect(await seenEverywhere("alice", "messages", all)).toEqual([...all].sort());
    expect(await seenEverywhere("bob", "messages", all)).toEqual([msg.g1!, msg.g2!, msg.g3!].sort());
    expect(await seenEverywhere("carol", "messages", all)).toEqual([]);
    // For an anonymous caller the rule holds for no record at all: 401, as a rule that needs a user answers.
    expect((await as("anon", "GET", "/api/v1/messages")).status).toBe(401);
    expect((await as("anon", "GET", `/api/v1/messages/${msg.g1}`)).status).toBe(401);
    expect(await seenEverywhere("bob", "rooms", Object.values(room))).toEqual([room.general!]);
    // Aggregate per room counts only what the caller reads.
    const groups = await as("bob", "GET", "/api/v1/messages/aggregate?fn=count&group_by=room");
    expect(groups.body).toEqual({ groups: [{ group: room.general, value: 3 }] });
  });

  test("expand embeds a room only for its members; a relation value naming a hidden room is refused as unknown", async () => {
    const mine = await as("bob", "GET", `/api/v1/messages/${msg.g1}?expand=room`);
    expect(mine.body._expand.room.name).toBe("general");
    // Carol sees a member record of hers? none: she may not even create a message in a room she cannot read.
    const write = await as("carol", "POST", "/api/v1/messages", { room: room.secret, text: "let me in" });
    expect(write.status).toBe(403);
    // Bob is a member of general but not secret: a message pointing at secret is refused.
    const hidden = await as("bob", "POST", "/api/v1/messages", { room: room.secret, text: "let me in" });
    expect(hidden.status).toBe(403);
    // Moving his message into the secret room: the room is hidden from him, so unknown (422 relation).
    const move = await as("bob", "PATCH", `/api/v1/messages/${msg.g2}`, { room: room.secret });
    expect(move.status).toBe(422);
    expect(move.body.errors[0].rule).toBe("relation");
  });

  test("update through a relation path: the room owner edits any message, a member only their own", async () => {
    expect((await as("bob", "PATCH", `/api/v1/messages/${msg.g1}`, { text: "edited" })).status).toBe(403);
    expect((await as("bob", "PATCH", `/api/v1/messages/${msg.g2}`, { text: "g2 edited" })).status).toBe(200);
    expect((await as("alice", "PATCH", `/api/v1/messages/${msg.g3}`, { text: "g3 moderated" })).status).toBe(200);
    expect((await as("bob", "DELETE", `/api/v1/messages/${msg.g3}`)).status).toBe(403);
    expect((await as("carol", "DELETE", `/api/v1/messages/${msg.g3}`)).status).toBe(404);
  });

  test("a `many` field lists and filters only the messages the caller may read", async () => {
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "rooms", from_field: "posts", to_col: "messages", type: "many", to_field: "room" }), 201);
    // Alice reads both rooms (she owns them); the filter sees the secret room's message for her only.
    const mine = await as("alice", "GET", `/api/v1/rooms?filter=posts:eq:${msg.s1}`);
    expect(idsOf(mine.body.items)).toEqual([room.secret!]);
    const bobs = await as("bob", "GET", `/api/v1/rooms?filter=posts:eq:${msg.s1}`);
    expect(bobs.body).toEqual({ items: [], next_cursor: null, total: 0 });
    // Carol reads no room at all; a filter cannot show her one through a message.
    expect((await as("carol", "GET", `/api/v1/rooms?filter=posts:ne:null`)).body.total).toBe(0);
    const general = await as("bob", "GET", `/api/v1/rooms/${room.general}`);
    expect([...general.body.posts].sort()).toEqual([msg.g1!, msg.g2!, msg.g3!].sort());
  });

  test("a member removed from a room stops reading and receiving at the next request", async () => {
    const bob = await followBare(t, ["messages", "markers"], u.bob!.token);
    const alice = await followBare(t, ["messages", "markers"], u.alice!.token);
    ok(await as("alice", "POST", "/api/v1/messages", { room: room.general, text: "before" }), 201);
    ok(await as("alice", "POST", "/api/v1/messages", { room: room.secret, text: "secret before" }), 201);
    await syncStreams(t, [bob, alice]);
    ok(await as("alice", "DELETE", `/api/v1/members/${member.bg}`), 200);
    expect((await as("bob", "GET", `/api/v1/messages/${msg.g1}`)).status).toBe(404);
    expect((await as("bob", "GET", "/api/v1/messages")).body.total).toBe(0);
    ok(await as("alice", "POST", "/api/v1/messages", { room: room.general, text: "after" }), 201);
    await syncStreams(t, [bob, alice]);
    const texts = (s: SseClient) => s.changes().filter((e) => e.data.collection === "messages").map((e) => e.data.record.text);
    expect(texts(bob)).toEqual(["before"]);
    expect(texts(alice)).toEqual(["before", "secret before", "after"]);
    // Back in the room: he reads again.
    ok(await as("alice", "POST", "/api/v1/members", { room: room.general, user: u.bob!.id }), 201);
    expect((await as("bob", "GET", `/api/v1/messages/${msg.g1}`)).status).toBe(200);
  });
});

describe("a shop: active products for all, orders for their buyer and staff (@auth.metadata, a relation path in a create rule)", () => {
  const prod: Record<string, string> = {};
  beforeAll(async () => {
    ok(await t.admin("POST", C, { name: "products", fields: [{ name: "name", type: "text" }, { name: "price", type: "number" }, { name: "active", type: "boolean" }] }), 201);
    ok(await t.admin("POST", C, { name: "orders", fields: [{ name: "qty", type: "number" }] }), 201);
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "orders", from_field: "product", to_col: "products", type: "one" }), 201);
    ok(await t.admin("PUT", `${C}/products/rules`, { rules: { read: "active = true || @auth.metadata.staff = true", create: "@auth.metadata.staff = true" } }), 200);
    ok(
      await t.admin("PUT", `${C}/orders/rules`, {
        rules: { read: "_owner_id = @auth.id || @auth.metadata.staff = true", create: "product.active = true && @request.body.qty > 0", update: "disabled", delete: "disabled" },
      }),
      200,
    );
    prod.tea = (await as("dave", "POST", "/api/v1/products", { name: "tea", price: 3, active: true })).body._id;
    prod.cake = (await as("dave", "POST", "/api/v1/products", { name: "cake", price: 5, active: true })).body._id;
    prod.old = (await as("dave", "POST", "/api/v1/products", { name: "old", price: 100, active: false })).body._id;
    expect((await as("alice", "POST", "/api/v1/products", { name: "mine", price: 1, active: true })).status).toBe(403);
  }, 60_000);

  test("products: active ones for all, every one for staff; sums agree", async () => {
    const all = Object.values(prod);
    expect(await seenEverywhere("anon", "products", all)).toEqual([prod.tea!, prod.cake!].sort());
    expect(await seenEverywhere("dave", "products", all)).toEqual([...all].sort());
    expect((await as("anon", "GET", "/api/v1/products/aggregate?fn=sum&field=price")).body).toEqual({ value: 8 });
    expect((await as("dave", "GET", "/api/v1/products/aggregate?fn=sum&field=price")).body).toEqual({ value: 108 });
  });

  test("orders: an active product and a positive quantity; the buyer and staff read it", async () => {
    const o1 = await as("alice", "POST", "/api/v1/orders", { product: prod.tea, qty: 2 });
    expect(o1.status).toBe(201);
    expect((await as("alice", "POST", "/api/v1/orders", { product: prod.tea, qty: 0 })).status).toBe(403);
    // A hidden (inactive) product is unknown to her: 422 relation, before the rule.
    const old = await as("alice", "POST", "/api/v1/orders", { product: prod.old, qty: 1 });
    expect([403, 422]).toContain(old.status);
    const o2 = await as("bob", "POST", "/api/v1/orders", { product: prod.cake, qty: 1 });
    expect(o2.status).toBe(201);
    const all = [o1.body._id, o2.body._id];
    expect(await seenEverywhere("alice", "orders", all)).toEqual([o1.body._id]);
    expect(await seenEverywhere("dave", "orders", all)).toEqual([...all].sort());
    expect((await as("anon", "GET", "/api/v1/orders/count")).status).toBe(401);
    // Expand: the product of her order, embedded.
    expect((await as("alice", "GET", `/api/v1/orders/${o1.body._id}?expand=product`)).body._expand.product.name).toBe("tea");
  });
});

describe("shared todo lists: the owner and the users a list names (?= over a JSON array, through a relation path)", () => {
  const list: Record<string, string> = {};
  const item: Record<string, string> = {};
  beforeAll(async () => {
    ok(await t.admin("POST", C, { name: "lists", fields: [{ name: "title", type: "text" }, { name: "editors", type: "json" }] }), 201);
    ok(await t.admin("POST", C, { name: "items", fields: [{ name: "text", type: "text" }, { name: "done", type: "boolean" }] }), 201);
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "items", from_field: "list", to_col: "lists", type: "one", on_delete: "cascade" }), 201);
    ok(await t.admin("PUT", `${C}/lists/rules`, { rules: { read: "_owner_id = @auth.id || editors ?= @auth.id", create: "authenticated", update: "owner", delete: "owner" } }), 200);
    ok(
      await t.admin("PUT", `${C}/items/rules`, {
        rules: { read: "list._owner_id = @auth.id || list.editors ?= @auth.id", create: "list._owner_id = @auth.id || list.editors ?= @auth.id", update: "list._owner_id = @auth.id || list.editors ?= @auth.id", delete: "list._owner_id = @auth.id" },
      }),
      200,
    );
    list.home = (await as("alice", "POST", "/api/v1/lists", { title: "home", editors: [u.bob!.id] })).body._id;
    list.work = (await as("alice", "POST", "/api/v1/lists", { title: "work", editors: [] })).body._id;
    list.bobs = (await as("bob", "POST", "/api/v1/lists", { title: "bob's", editors: [u.alice!.id, u.carol!.id] })).body._id;
    for (const [key, l, who] of [["h1", "home", "alice"], ["h2", "home", "bob"], ["w1", "work", "alice"], ["b1", "bobs", "carol"]] as const) {
      const res = await as(who, "POST", "/api/v1/items", { list: list[l], text: key, done: false });
      ok(res, 201);
      item[key] = res.body._id;
    }
  }, 60_000);

  test("each user reads the lists they own or are named in, and their items", async () => {
    expect(await seenEverywhere("alice", "lists", Object.values(list))).toEqual(Object.values(list).sort());
    expect(await seenEverywhere("bob", "lists", Object.values(list))).toEqual([list.home!, list.bobs!].sort());
    expect(await seenEverywhere("carol", "lists", Object.values(list))).toEqual([list.bobs!]);
    expect(await seenEverywhere("bob", "items", Object.values(item))).toEqual([item.h1!, item.h2!, item.b1!].sort());
    expect(await seenEverywhere("carol", "items", Object.values(item))).toEqual([item.b1!]);
    expect((await as("anon", "GET", "/api/v1/items")).status).toBe(401);
  });

  test("writes follow the list: a named user adds and ticks items, not in a list they are not named in", async () => {
    expect((await as("carol", "POST", "/api/v1/items", { list: list.home, text: "nope" })).status).toBe(403);
    expect((await as("bob", "PATCH", `/api/v1/items/${item.h1}`, { done: true })).status).toBe(200);
    expect((await as("bob", "PATCH", `/api/v1/items/${item.w1}`, { done: true })).status).toBe(404);
    expect((await as("bob", "DELETE", `/api/v1/items/${item.h1}`)).status).toBe(403);
    // Unnamed from the list: bob loses it at his next request.
    ok(await as("alice", "PATCH", `/api/v1/lists/${list.home}`, { editors: [] }), 200);
    expect((await as("bob", "GET", `/api/v1/items/${item.h1}`)).status).toBe(404);
    expect(await seenEverywhere("bob", "items", Object.values(item))).toEqual([item.b1!]);
  });
});

describe("hostile rules and values", () => {
  test("a literal, a metadata key or value cannot reach the SQL; a filter cannot widen the rule", async () => {
    ok(await t.admin("POST", C, { name: "vaults", fields: [{ name: "secret", type: "text" }, { name: "team", type: "text" }] }), 201);
    ok(await t.admin("PUT", `${C}/vaults/rules`, { rules: { read: "team = @auth.metadata.team || secret = \"x' OR 1=1 --\"" } }), 200);
    const red = (await t.admin("POST", "/api/v1/vaults", { secret: "s1", team: "red" })).body._id;
    const blue = (await t.admin("POST", "/api/v1/vaults", { secret: "s2", team: "blue" })).body._id;
    expect(await seenEverywhere("dave", "vaults", [red, blue])).toEqual([red]);
    ok(await t.admin("PATCH", `/api/v1/admin/users/${u.erin!.id}`, { metadata: { team: "' OR '1'='1", constructor: "x" } }), 200);
    expect(await seenEverywhere("erin", "vaults", [red, blue])).toEqual([]);
    // A rule naming a key the prototype holds reads nothing from it.
    ok(await t.admin("PUT", `${C}/vaults/rules`, { rules: { read: "@auth.metadata.__proto__ != null || @auth.metadata.toString != null" } }), 200);
    expect((await as("alice", "GET", "/api/v1/vaults")).status).toBe(403);
    // A filter that tries to widen: ORs are not in the filter language, and every filter is ANDed with the rule.
    ok(await t.admin("PUT", `${C}/vaults/rules`, { rules: { read: "team = @auth.metadata.team" } }), 200);
    const wide = await as("dave", "GET", "/api/v1/vaults?filter=team:ne:nobody&filter[secret][like]=%25");
    expect(idsOf(wide.body.items)).toEqual([red]);
    expect(wide.body.total).toBe(1);
  });
});

describe("a realtime filter topic is matched whatever the subscriber's delete rule", () => {
  test("a delete event reaches a topic filtered on a relation field, though the delete rule does not hold for the subscriber", async () => {
    ok(await t.admin("POST", C, { name: "tags", fields: [{ name: "name", type: "text" }], rules: { read: "public" } }), 201);
    ok(await t.admin("POST", C, { name: "notes", fields: [{ name: "text", type: "text" }], rules: { read: "public", delete: "owner" } }), 201);
    ok(await t.admin("POST", "/api/v1/admin/relations", { from_col: "notes", from_field: "tags", to_col: "tags", type: "many_via" }), 201);
    const tag = (await t.admin("POST", "/api/v1/tags", { name: "red" })).body._id;
    const note = (await t.admin("POST", "/api/v1/notes", { text: "n", tags: [tag] })).body._id;
    const s = await followBare(t, [{ collection: "notes", filter: `tags:eq:${tag}` }, "markers"]);
    ok(await t.admin("DELETE", `/api/v1/notes/${note}`), 200);
    await syncStreams(t, [s]);
    expect(s.changes().filter((e) => e.data.collection === "notes").map((e) => [e.event, e.data.record._id])).toEqual([["delete", note]]);
  });
});
