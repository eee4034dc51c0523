import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, registerUser } from "../helpers/app.ts";
import { createLiveApp, followBare, syncStreams, type LiveApp } from "../helpers/sse.ts";

// Expression rules (CONTRACT §12) at the admin API: accepted for any rule when a collection is made or its rules
// are set, checked against the catalog then (400 naming the token and its position), returned as given, and
// checked without being set by the console's dry run, and applied on the data paths.

const C = "/api/v1/admin/collections";
let t: LiveApp;
let user: { token: string; id: string };

beforeAll(async () => {
  t = createLiveApp();
  user = await registerUser(t, "rules@example.com");
  expect((await t.admin("POST", C, { name: "rooms", rules: { read: "public", create: "public" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/rooms", { name: "lobby", owner: "someone" })).status).toBe(201);
  expect((await t.admin("POST", C, { name: "posts", rules: { read: "public", create: "public", update: "public", delete: "public" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/posts", { title: "a", status: "draft", views: 1, tags: ["x"] })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "room", to_col: "rooms", type: "one" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "labels", to_col: "rooms", type: "many_via" })).status).toBe(201);
  // Bounded generously: on PostgreSQL the first test app of a process starts the test cluster.
}, 60_000);
afterAll(() => t.stop());

const bad = (error: string) => ({ error, code: "bad_request" });

describe("setting expression rules", () => {
  test("a collection is made with expression rules, returned as given", async () => {
    const rules = {
      read: "_owner_id = @auth.id || @auth.roles ?= 'editor'",
      create: "@auth.verified && !@request.body.owner:isset",
      update: "@exists(posts, room = @record._id && _owner_id = @auth.id)",
      delete: "owner",
    };
    const res = await t.admin("POST", C, { name: "notes", rules });
    expect(res.status).toBe(201);
    expect(res.body.rules).toEqual(rules);
    expect((await t.admin("GET", `${C}/notes`)).body.rules).toEqual(rules);
    expect((await t.admin("GET", C)).body.items.find((c: { name: string }) => c.name === "notes").rules).toEqual(rules);
  });

  test("PUT …/rules sets expressions over fields, relation paths, many_via fields and @exists; the others stay", async () => {
    const rules = {
      read: "status = 'published' || _owner_id = @auth.id",
      update: "room.owner = @auth.id || labels ?= @auth.id || tags ?= 'x'",
    };
    const res = await t.admin("PUT", `${C}/posts/rules`, { rules });
    expect(res.status).toBe(200);
    expect(res.body.rules).toEqual({ ...rules, create: "public", delete: "public" });
    // PATCH takes them too.
    const patched = await t.admin("PATCH", `${C}/posts`, { rules: { delete: "views > 10 && @now > _created_at" } });
    expect(patched.status).toBe(200);
    expect(patched.body.rules.delete).toBe("views > 10 && @now > _created_at");
  });

  const refusals: [string, string, Record<string, unknown>, string][] = [
    ["a syntax error", "posts", { read: "status = 'a' && (views > 1))" }, "invalid read rule: unexpected ')' at 28: no '(' opens it"],
    ["an unknown field", "posts", { read: "staus = 'published'" }, "invalid read rule: unknown field 'staus' at 1"],
    ["an unknown relation in a path", "posts", { read: "title.name = 'x'" }, "invalid read rule: 'title' in 'title.name' at 1 is not a relation of 'posts'"],
    ["an unknown collection in @exists", "posts", { read: "@exists(memberz, true)" }, "invalid read rule: unknown collection 'memberz' at 9"],
    ["@request.body in a read rule", "posts", { read: "@request.body.title = 'x'" }, "invalid read rule: '@request.body.title' at 1: @request.body is known only in create and update rules, not in a read rule"],
    ["@request.body in a delete rule", "posts", { delete: "@request.body.title:isset" }, "invalid delete rule: '@request.body.title:isset' at 1: @request.body is known only in create and update rules, not in a delete rule"],
    ["another @ name", "posts", { update: "@request.headers.x = 'y'" }, "invalid update rule: unknown name '@request.headers.x' at 1"],
    ["a type mismatch", "posts", { read: "views = 'ten'" }, "invalid read rule: '=' at 7: cannot compare 'views' (number) with ''ten'' (text)"],
    ["a rule over 2,000 characters", "posts", { read: `title = '${"x".repeat(2000)}'` }, "invalid read rule: longer than 2000 characters (2010)"],
    ["nesting past the limit", "posts", { read: "(".repeat(1500) }, "invalid read rule: nested deeper than 32 at 33 ('(')"],
    ["a field a new collection does not have yet", "", { read: "status = 'published'" }, "invalid read rule: unknown field 'status' at 1"],
    ["an empty rule", "posts", { create: "" }, "invalid create rule: empty expression"],
    ["a number", "posts", { read: 3 }, 'invalid read rule: expected "public", "authenticated", "owner", "disabled", { "role": "<name>" } or an expression'],
  ];
  for (const [name, col, rules, error] of refusals) {
    test(`400 for ${name}, naming the token and its position; nothing changes`, async () => {
      const before = (await t.admin("GET", `${C}/posts`)).body;
      const res = col ? await t.admin("PUT", `${C}/${col}/rules`, { rules }) : await t.admin("POST", C, { name: "fresh", rules });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(bad(error));
      expect((await t.admin("GET", `${C}/posts`)).body).toEqual(before);
      expect((await t.admin("GET", `${C}/fresh`)).status).toBe(404);
    });
  }

  test("100,000 opening parentheses are refused at once, and the server goes on answering", async () => {
    const res = await t.admin("PUT", `${C}/posts/rules`, { rules: { read: "(".repeat(100_000) } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(bad("invalid read rule: longer than 2000 characters (100000)"));
    expect((await t.req("GET", "/health")).status).toBe(200);
  });

  test("a new collection's rules may name its system fields, other collections and @auth", async () => {
    const rules = { read: "_owner_id = @auth.id || @exists(posts, _owner_id = @auth.id)", create: "@auth.metadata.plan = 'pro'" };
    const res = await t.admin("POST", C, { name: "extras", rules });
    expect(res.status).toBe(201);
    expect(res.body.rules).toMatchObject(rules);
    // @exists over itself.
    expect((await t.admin("POST", C, { name: "selfish", rules: { read: "@exists(selfish, _owner_id = @auth.id)" } })).status).toBe(201);
  });
});

describe("the dry run: POST …/rules/check", () => {
  const check = (body: unknown, col = "posts", token: string | null = ADMIN_SECRET) => t.req("POST", `${C}/${col}/rules/check`, { token, body });

  test("200 { ok: true } for a rule that would be accepted, of any kind", async () => {
    for (const [op, rule] of [
      ["read", "status = 'published' || room.owner = @auth.id"],
      ["create", "@request.body.status = 'draft'"],
      ["update", "public"],
      ["delete", { role: "editor" }],
    ]) {
      const res = await check({ op, rule });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true });
    }
  });

  test("400 with the message and the position of the token it names; nothing is set", async () => {
    const before = (await t.admin("GET", `${C}/posts`)).body.rules;
    expect((await check({ op: "read", rule: "status = 'a' && (views > 1))" })).body).toEqual({ ...bad("invalid read rule: unexpected ')' at 28: no '(' opens it"), position: 28 });
    expect((await check({ op: "read", rule: "staus = 1" })).body).toEqual({ ...bad("invalid read rule: unknown field 'staus' at 1"), position: 1 });
    expect((await check({ op: "delete", rule: "views > 1 && @request.body.x = 1" })).body).toEqual({
      ...bad("invalid delete rule: '@request.body.x' at 14: @request.body is known only in create and update rules, not in a delete rule"),
      position: 14,
    });
    expect((await check({ op: "read", rule: { role: "" } })).body).toEqual(
      bad('invalid read rule: expected "public", "authenticated", "owner", "disabled", { "role": "<name>" } or an expression'),
    );
    expect((await t.admin("GET", `${C}/posts`)).body.rules).toEqual(before);
  });

  test("a bad body is 400, an unknown collection 404, a user 403, no credentials 401", async () => {
    expect((await check({ op: "list", rule: "true" })).body).toEqual(bad("op must be one of read, create, update, delete"));
    expect((await check({ op: "read" })).body).toEqual(bad("rule is required"));
    expect((await check({ op: "read", rule: "true", extra: 1 })).body).toEqual(bad('unknown key "extra": expected op and rule'));
    expect((await check({ op: "read", rule: "true" }, "nope")).status).toBe(404);
    expect((await check({ op: "read", rule: "true" }, "posts", user.token)).status).toBe(403);
    expect((await check({ op: "read", rule: "true" }, "posts", null)).status).toBe(401);
  });
});

describe("an expression rule is applied on every data path (rule-apps.test.ts holds the tables per path and rule kind)", () => {
  let id: string;
  let refId: string;
  beforeAll(async () => {
    // Readable where n > 0 or by its owner; the vault's other rules hold for everyone.
    expect((await t.admin("POST", C, { name: "vault", fields: [{ name: "title", type: "text" }, { name: "n", type: "number" }], rules: { read: "n > 0 || _owner_id = @auth.id", create: "true", update: "true", delete: "true" } })).status).toBe(201);
    id = (await t.admin("POST", "/api/v1/vault", { title: "secret", n: 1 })).body._id;
    expect((await t.admin("POST", "/api/v1/vault", { title: "hidden", n: 0 })).status).toBe(201);
    // A public collection whose relation points into the vault.
    expect((await t.admin("POST", C, { name: "refs", rules: { read: "public", create: "public", update: "public" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "refs", from_field: "target", to_col: "vault", type: "one" })).status).toBe(201);
    refId = (await t.admin("POST", "/api/v1/refs", { target: id })).body._id;
  });

  /** Back to the two records of beforeAll (the tests that write run in any order). */
  async function resetVault(): Promise<void> {
    const all = (await t.admin("GET", "/api/v1/vault?include_deleted=true&limit=500")).body.items as { _id: string; title: string }[];
    for (const r of all) if (r._id !== id && r.title !== "hidden") expect((await t.admin("DELETE", `/api/v1/admin/collections/vault/records/${r._id}`)).status).toBe(200);
    expect((await t.admin("PATCH", `/api/v1/vault/${id}`, { title: "secret" })).status).toBe(200);
  }

  test("reads: get (also the fast anonymous path), list, count, aggregate see the records the rule lets through", async () => {
    for (const token of [user.token, null]) {
      expect((await t.req("GET", `/api/v1/vault/${id}`, { token })).body.title).toBe("secret");
      const list = await t.req("GET", "/api/v1/vault", { token });
      expect(list.body.items.map((r: { title: string }) => r.title)).toEqual(["secret"]);
      expect(list.body.total).toBe(1);
      expect((await t.req("GET", "/api/v1/vault/count", { token })).body).toEqual({ total: 1 });
      expect((await t.req("GET", "/api/v1/vault/aggregate?fn=count", { token })).body).toEqual({ value: 1 });
    }
    const raw = await fetch(`${t.base}/api/v1/vault/${id}`);
    expect(raw.status).toBe(200);
    expect((await t.admin("GET", "/api/v1/vault")).body.total).toBe(2);
  });

  test("writes: create, bulk, update, delete and restore pass a rule that holds, a batch too", async () => {
    const as = (method: string, path: string, body?: unknown) => t.req(method, path, { token: user.token, body });
    const mine = await as("POST", "/api/v1/vault", { title: "mine", n: 0 });
    expect(mine.status).toBe(201);
    expect((await as("POST", "/api/v1/vault/bulk", [{ title: "mine too", n: 0 }])).status).toBe(201);
    expect((await as("PATCH", `/api/v1/vault/${id}`, { title: "changed" })).status).toBe(200);
    expect((await as("DELETE", `/api/v1/vault/${mine.body._id}`)).status).toBe(200);
    expect((await as("POST", `/api/v1/vault/${mine.body._id}/restore`)).status).toBe(200);
    const batch = await as("POST", "/api/v1/vault/batch", { operations: [{ op: "update", id, data: { title: "secret" } }] });
    expect(batch.status).toBe(200);
    // The user's own records (n = 0) are theirs to read; the other hidden one is not.
    expect((await as("GET", "/api/v1/vault")).body.items.map((r: { title: string }) => r.title).sort()).toEqual(["mine", "mine too", "secret"]);
    await resetVault();
  });

  test("expand embeds a readable target, and a relation value pointing at a hidden one is refused as unknown", async () => {
    const ref = await t.req("GET", `/api/v1/refs/${refId}?expand=target`, { token: user.token });
    expect(ref.status).toBe(200);
    expect(ref.body._expand.target.title).toBe("secret");
    const hidden = (await t.admin("GET", "/api/v1/vault?filter=title:eq:hidden")).body.items[0]._id;
    const write = await t.req("POST", "/api/v1/refs", { token: user.token, body: { target: hidden } });
    expect(write.status).toBe(422);
    expect(write.body.errors[0].rule).toBe("relation");
    expect((await t.req("POST", "/api/v1/refs", { token: user.token, body: { target: id } })).status).toBe(201);
  });

  test("realtime sends an event to the streams whose reader the rule lets through", async () => {
    expect((await t.admin("POST", C, { name: "markers", rules: { read: "public" } })).status).toBe(201);
    const userStream = await followBare(t, ["vault", "markers"], user.token);
    const anonStream = await followBare(t, ["vault", "markers"]);
    const adminStream = await followBare(t, ["vault", "markers"], ADMIN_SECRET);
    await t.admin("POST", "/api/v1/vault", { title: "news", n: 2 });
    await t.admin("POST", "/api/v1/vault", { title: "quiet", n: 0 });
    await syncStreams(t, [userStream, anonStream, adminStream]);
    const titles = (s: typeof userStream) => s.changes().filter((e) => e.data.collection === "vault").map((e) => e.data.record.title);
    expect(titles(userStream)).toEqual(["news"]);
    expect(titles(anonStream)).toEqual(["news"]);
    expect(titles(adminStream)).toEqual(["news", "quiet"]);
    await resetVault();
  });
});

describe("atomic operators under rules that read @request.body", () => {
  test("an operator on a field the rule reads from the body is denied, on PATCH, batch and multipart; others pass", async () => {
    const rules = { read: "public", create: "true", update: "_owner_id = @auth.id && !@request.body.credits:isset && @request.body.likes <= 1" };
    expect((await t.admin("POST", C, { name: "wallets", fields: [{ name: "credits", type: "number" }, { name: "likes", type: "number" }, { name: "n", type: "number" }], rules })).status).toBe(201);
    const w = await t.req("POST", "/api/v1/wallets", { token: user.token, body: { credits: 5, likes: 0, n: 0 } });
    expect(w.status).toBe(201);
    const path = `/api/v1/wallets/${w.body._id}`;
    const patch = (body: unknown) => t.req("PATCH", path, { token: user.token, body });
    // Setting credits is what the rule forbids; an operator on it is no way round.
    expect((await patch({ credits: 1000, likes: 1 })).status).toBe(403);
    expect((await patch({ "credits+": 1_000_000, likes: 1 })).status).toBe(403);
    expect((await patch({ "Credits+": 1_000_000, likes: 1 })).status).toBe(403);
    // likes may be sent as 1 at most; likes+ would let it grow past what the rule sees.
    expect((await patch({ "likes+": 5 })).status).toBe(403);
    const batch = await t.req("POST", "/api/v1/wallets/batch", { token: user.token, body: { operations: [{ op: "update", id: w.body._id, data: { "credits+": 10, likes: 1 } }] } });
    expect(batch.status).toBe(400);
    expect(batch.body.code).toBe("batch_failed");
    const form = new FormData();
    form.append("credits+", "10");
    form.append("likes", "1");
    const multipart = await t.app.handle(new Request(`http://localhost${path}`, { method: "PATCH", body: form, headers: { authorization: `Bearer ${user.token}` } }));
    expect(multipart.status).toBe(403);
    // An operator on a field the rule does not read from the body is applied.
    const ok = await patch({ "n+": 3, likes: 1 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ credits: 5, likes: 1, n: 3 });
    expect((await t.admin("GET", path)).body.credits).toBe(5);
  });
});

describe("a create rule that asks the database, on a bulk", () => {
  test("each record is decided after the bulk's records before it: one vote per poll holds inside one bulk", async () => {
    const rule = "!@exists(votes, poll = @request.body.poll && _owner_id = @auth.id)";
    expect((await t.admin("POST", C, { name: "votes", fields: [{ name: "poll", type: "text" }], rules: { read: "public", create: rule } })).status).toBe(201);
    const bulk = (body: unknown) => t.req("POST", "/api/v1/votes/bulk", { token: user.token, body });
    const twice = await bulk([{ poll: "a" }, { poll: "b" }, { poll: "a" }]);
    expect(twice.status).toBe(403);
    expect(twice.body).toMatchObject({ code: "forbidden", index: 2 });
    expect((await t.admin("GET", "/api/v1/votes/count")).body.total).toBe(0);
    const once = await bulk([{ poll: "a" }, { poll: "b" }, { poll: "c" }]);
    expect(once.status).toBe(201);
    expect((await bulk([{ poll: "d" }, { poll: "b" }])).body).toMatchObject({ code: "forbidden", index: 1 });
    expect((await t.admin("GET", "/api/v1/votes/count")).body.total).toBe(3);
  });
});

describe("a field an expression rule names", () => {
  test("a rule may name a declared field before any record; renaming or dropping it is 409 until the rule changes", async () => {
    expect((await t.admin("POST", C, { name: "drafts", fields: [{ name: "state", type: "text" }, { name: "n", type: "number" }] })).status).toBe(201);
    const rules = await t.admin("PUT", `${C}/drafts/rules`, { rules: { read: "state = 'open'" } });
    expect(rules.status).toBe(200);
    // Another collection's @exists naming it counts too.
    expect((await t.admin("PUT", `${C}/rooms/rules`, { rules: { update: "@exists(drafts, n > 1)" } })).status).toBe(200);
    const rename = await t.admin("PATCH", `${C}/drafts/fields/state`, { name: "status" });
    expect(rename.status).toBe(409);
    expect(rename.body).toEqual({ error: expect.stringContaining('the read rule of "drafts"'), code: "conflict" });
    const drop = await t.admin("DELETE", `${C}/drafts/fields/n`);
    expect(drop.status).toBe(409);
    expect(drop.body.error).toContain('the update rule of "rooms"');
    expect((await t.admin("GET", `${C}/drafts`)).body.fields).toEqual([{ name: "state", type: "text" }, { name: "n", type: "number" }]);
    expect((await t.admin("PUT", `${C}/drafts/rules`, { rules: { read: "public" } })).status).toBe(200);
    expect((await t.admin("PATCH", `${C}/drafts/fields/state`, { name: "status" })).status).toBe(200);
    expect((await t.admin("PUT", `${C}/rooms/rules`, { rules: { update: "disabled" } })).status).toBe(200);
    expect((await t.admin("DELETE", `${C}/drafts/fields/n`)).status).toBe(200);
  });
});

describe("a relation or a collection an expression rule names", () => {
  test("is not deleted (409) until the rule changes", async () => {
    for (const name of ["kinds", "shelves", "boxes"]) expect((await t.admin("POST", C, { name })).status).toBe(201);
    const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "shelves", from_field: "labs", to_col: "kinds", type: "many_via" });
    expect(rel.status).toBe(201);
    expect((await t.admin("PUT", `${C}/shelves/rules`, { rules: { read: "!(labs ?= 'x')" } })).status).toBe(200);
    expect((await t.admin("PUT", `${C}/boxes/rules`, { rules: { read: "@exists(kinds, _owner_id = @auth.id)" } })).status).toBe(200);
    const relation = await t.admin("DELETE", `/api/v1/admin/relations/${rel.body.id}`);
    expect({ status: relation.status, code: relation.body.code }).toEqual({ status: 409, code: "conflict" });
    expect(relation.body.error).toContain('the read rule of "shelves"');
    const collection = await t.admin("DELETE", `${C}/kinds`);
    expect({ status: collection.status, code: collection.body.code }).toEqual({ status: 409, code: "conflict" });
    expect((await t.admin("GET", "/api/v1/admin/relations")).body.items.some((r: { id: string }) => r.id === rel.body.id)).toBe(true);
    expect((await t.admin("PUT", `${C}/shelves/rules`, { rules: { read: "public" } })).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/admin/relations/${rel.body.id}`)).status).toBe(200);
    expect((await t.admin("DELETE", `${C}/kinds`)).body.error).toContain('the read rule of "boxes"');
    expect((await t.admin("PUT", `${C}/boxes/rules`, { rules: { read: "public" } })).status).toBe(200);
    expect((await t.admin("DELETE", `${C}/kinds`)).status).toBe(200);
  });
});
