import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createCollection, registerUser } from "../helpers/app.ts";
import { createLiveApp, followBare, syncStreams, type LiveApp, type SseClient } from "../helpers/sse.ts";

// Topics a hostile client may send (CONTRACT §8c "Realtime topics"): none of them may stall the server.

let t: LiveApp;
// On PostgreSQL the first app of a file waits for its database to be made.
beforeEach(async () => {
  t = createLiveApp();
  await createCollection(t, "markers");
}, 30_000);
afterEach(() => t.stop());

/**
 * Asks /health over and over until `done` holds (the fan-out of the hostile write is over) and returns the
 * slowest answer in ms. A fan-out that holds the event loop makes one of them wait as long as it runs.
 */
async function slowestHealthWhile(done: () => boolean): Promise<number> {
  let slowest = 0;
  const deadline = Date.now() + 60_000;
  while (!done() && Date.now() < deadline) {
    const start = performance.now();
    expect((await fetch(`${t.base}/api/v1/health`)).status).toBe(200);
    slowest = Math.max(slowest, performance.now() - start);
  }
  expect(done()).toBe(true);
  return slowest;
}

/** Counts the statements the app's engine runs whose text matches `re`, until `stop`. */
function countStatements(re: RegExp): { readonly count: number; stop(): void } {
  const db = t.ctx.db as unknown as Record<"get" | "all", (sql: string, params?: unknown[]) => Promise<unknown>>;
  const kept = { get: db.get, all: db.all };
  let count = 0;
  for (const name of ["get", "all"] as const)
    db[name] = function (this: unknown, sql: string, params?: unknown[]) {
      if (re.test(sql)) count++;
      return kept[name].call(this, sql, params);
    };
  return {
    get count() {
      return count;
    },
    stop() {
      Object.assign(db, kept);
    },
  };
}

/** Writes a marker and waits for `s` to get it while /health is probed: the slowest /health answer, in ms. */
async function markerWithHealth(s: SseClient): Promise<number> {
  const m = await t.admin("POST", "/api/v1/markers", { at: 1 });
  return slowestHealthWhile(() => s.messages.some((e) => e.data?.record?._id === m.body._id));
}

describe("filter topics cost little whatever they ask", () => {
  test("a `like` topic matches in linear time: a pattern of many `%` against a long value does not hold the server", async () => {
    await createCollection(t, "t", { read: "public", create: "public" });
    await t.admin("POST", "/api/v1/t", { title: "seed" });
    const pattern = `${"%a".repeat(16)}%b`;
    const s = await followBare(t, [{ collection: "t", filter: `title:like:${pattern}` }, { collection: "t", filter: "title:like:%A_A%z" }, "markers"]);
    expect((await t.req("POST", "/api/v1/t", { body: { title: "a".repeat(40) } })).status).toBe(201);
    const hit = await t.req("POST", "/api/v1/t", { body: { title: `${"a".repeat(40)}b` } });
    expect(await markerWithHealth(s)).toBeLessThan(200);
    // The pattern still means what it means in a list: only the value ending in b matched.
    expect(s.changes().filter((e) => e.data.collection === "t").map((e) => e.data.record._id)).toEqual([hit.body._id]);
  });

  test("a `like` pattern past 256 characters is refused in a topic as in a list (400)", async () => {
    await createCollection(t, "t", { read: "public", create: "public" });
    await t.admin("POST", "/api/v1/t", { title: "seed" });
    const s = await t.stream();
    const id = await s.clientId();
    const long = await t.subscribe(id, [{ collection: "t", filter: `title:like:%${"a".repeat(256)}%` }]);
    expect(long.status).toBe(400);
    expect(long.body.code).toBe("bad_request");
    const ok = await t.subscribe(id, [{ collection: "t", filter: `title:like:%${"a".repeat(254)}%` }]);
    expect(ok.body).toEqual({ ok: true, subscriptions: [expect.anything()] });
    // A stream's topics hold at most 4,096 characters of like patterns in all: 16 of 256, not 17.
    const topics = (n: number) => Array.from({ length: n }, (_, i) => ({ collection: "t", filter: `title:like:%${String(i).padStart(254, "a")}%` }));
    expect((await t.subscribe(id, topics(16))).status).toBe(200);
    const many = await t.subscribe(id, topics(17));
    expect(many.status).toBe(400);
    expect(many.body.error).toBe("a stream's topics hold at most 4096 characters of like patterns in all");
    s.close();
  });

  test("1,000 filter topics on a `many` field cost one query per event, not one per topic", async () => {
    await createCollection(t, "parents", { read: "public" });
    await createCollection(t, "kids", { read: "public" });
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "kids", from_field: "parent", to_col: "parents", type: "one" })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "parents", from_field: "kids", to_col: "kids", type: "many", to_field: "parent" })).status).toBe(201);
    const p = await t.admin("POST", "/api/v1/parents", { title: "with kids" });
    const lonely = await t.admin("POST", "/api/v1/parents", { title: "without" });
    // Kids of other parents make each `many` condition a scan.
    const others = await t.admin("POST", "/api/v1/parents/bulk", Array.from({ length: 7 }, (_, i) => ({ title: `other ${i}` })));
    for (let i = 0; i < 4; i++) {
      const kids = Array.from({ length: 500 }, (_, j) => ({ parent: others.body[j % 7]._id }));
      expect((await t.admin("POST", "/api/v1/kids/bulk", kids)).status).toBe(201);
    }
    expect((await t.admin("POST", "/api/v1/kids", { parent: p.body._id })).status).toBe(201);
    const topics = Array.from({ length: 999 }, () => ({ collection: "parents", filter: "kids:ne:null" }));
    const patchBoth = async (suffix: string) => {
      await t.admin("PATCH", `/api/v1/parents/${lonely.body._id}`, { title: `without${suffix}` });
      await t.admin("PATCH", `/api/v1/parents/${p.body._id}`, { title: `with kids${suffix}` });
    };
    // What the writes themselves ask of `kids` (each event carries the parent's `many` field).
    const writes = countStatements(/"kids"/);
    await patchBoth("");
    writes.stop();
    const s = await followBare(t, [...topics, "markers"]);
    const withTopics = countStatements(/"kids"/);
    await patchBoth("!");
    expect(await markerWithHealth(s)).toBeLessThan(200);
    withTopics.stop();
    // Matching the two events asked the database once each, for all 999 topics; and the one sent was
    // read once more, for its `many` field as this reader may see it.
    expect(withTopics.count - writes.count).toBeLessThanOrEqual(3);
    expect(s.changes().filter((e) => e.data.collection === "parents").map((e) => e.data.record.title)).toEqual(["with kids!"]);
  }, 30_000);
});

describe("filter topics on a collection the caller may not read", () => {
  test("are answered 401/403 exactly as the list answers, before any field is looked at", async () => {
    await createCollection(t, "members", { read: "authenticated" });
    await createCollection(t, "staff", { read: { role: "editor" } });
    await createCollection(t, "locked", { read: "disabled" });
    await createCollection(t, "mine", { read: "owner", create: "authenticated" });
    for (const col of ["members", "staff", "locked", "mine"]) await t.admin("POST", `/api/v1/${col}`, { title: "seed" });
    const user = await registerUser(t, "plain@example.com");
    // A stream per caller (a stream is bound to the first caller that sets its topics).
    const ids = new Map([undefined, user.token].map((token) => [token, t.stream().then((s) => s.clientId())]));
    for (const col of ["members", "staff", "locked", "mine"])
      for (const token of [undefined, user.token])
        for (const filter of ["nosuch:eq:x", "title:eq:x", "title:zz:x"]) {
          const list = await t.req("GET", `/api/v1/${col}?filter=${filter}`, { token });
          const topic = await t.subscribe(await ids.get(token)!, [{ collection: col, filter }], token);
          const seen = (r: { status: number; body: any }) => ({ col, token: !!token, filter, status: r.status, code: r.status === 200 ? null : r.body.code });
          expect(seen(topic)).toEqual(seen(list));
        }
  });
});

describe("a filter topic on an owner-read collection", () => {
  test("delivers only the subscriber's own records", async () => {
    await createCollection(t, "notes", { read: "owner", create: "authenticated" });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    await t.admin("POST", "/api/v1/notes", { title: "seed" });
    const s = await followBare(t, [{ collection: "notes", filter: "title:like:note" }, "markers"], alice.token);
    await t.req("POST", "/api/v1/notes", { token: bob.token, body: { title: "bob's note" } });
    const own = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { title: "alice's note" } });
    await syncStreams(t, [s]);
    expect(s.changes().filter((e) => e.data.collection === "notes").map((e) => e.data.record)).toEqual([own.body]);
  });
});

describe("roles are read at delivery", () => {
  test("a stream opened with an API key stops getting a role-only collection once the role is removed", async () => {
    await createCollection(t, "staff", { read: { role: "editor" } });
    const ed = await registerUser(t, "ed@example.com");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ed.id}`, { roles: ["editor"] })).status).toBe(200);
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "ed@example.com", password: "password123" } });
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: login.body.access_token, body: { name: "feed" } });
    expect(key.status).toBe(201);
    const s = await t.stream({ headers: { "x-api-key": key.body.key }, query: "?subscribe=staff,markers" });
    await s.clientId();
    await t.admin("POST", "/api/v1/staff", { title: "before" });
    await syncStreams(t, [s]);
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ed.id}`, { roles: [] })).status).toBe(200);
    await t.admin("POST", "/api/v1/staff", { title: "after" });
    await syncStreams(t, [s]);
    expect(s.changes().filter((e) => e.data.collection === "staff").map((e) => e.data.record.title)).toEqual(["before"]);
    // And given again, it holds again.
    expect((await t.admin("PATCH", `/api/v1/admin/users/${ed.id}`, { roles: ["editor"] })).status).toBe(200);
    await t.admin("POST", "/api/v1/staff", { title: "again" });
    await syncStreams(t, [s]);
    expect(s.changes().filter((e) => e.data.collection === "staff").map((e) => e.data.record.title)).toEqual(["before", "again"]);
  });
});
