import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { buildBinary, runCli } from "../helpers/cli.ts";
import { freshDatabaseUrl } from "../helpers/engine.ts";
import { postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { SseClient } from "../helpers/sse.ts";
import { waitFor } from "../helpers/wait.ts";

// Two `baas serve` processes of the compiled binary on one PostgreSQL database (CONTRACT §10, §11):
// a change made through one node (or the CLI) holds on the other at its next request.

setDefaultTimeout(120_000);
warnIfSkipped();

let bin: string;
let url: string;
let a: ServerProcess;
let b: ServerProcess;
let secret: string;

interface Reply {
  status: number;
  body: any;
}

async function call(node: ServerProcess, method: string, path: string, opts: { body?: unknown; token?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${node.url}/api/v1${path}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const admin = (node: ServerProcess, method: string, path: string, body?: unknown) => call(node, method, path, { body, token: secret });

/** Streams opened by the running test: closed after it, also when it failed (a stream left open would count against the next test's per-address limits). */
const opened: SseClient[] = [];
async function follow(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const s = await SseClient.open(url, headers);
  opened.push(s);
  return s;
}

describe.skipIf(!postgresAvailable)("two nodes on one PostgreSQL database", () => {
  beforeAll(async () => {
    [bin, url] = await Promise.all([buildBinary(), freshDatabaseUrl()]);
    // No ADMIN_SECRET: the first node generates one and stores its hash, so it can be rotated.
    const node = () => spawnServer({ cmd: [bin], args: ["--database", url], env: { ADMIN_SECRET: "" } });
    a = await node();
    secret = /baas_admin_[A-Za-z0-9_-]+/.exec(a.stderr())![0];
    b = await node();
  });

  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  afterAll(async () => {
    if (process.env.SHOW_NODE_LOGS) console.error(a?.stderr(), b?.stderr());
    await a?.cleanup();
    await b?.cleanup();
  });

  test("a collection created through A is usable on B at its next request; a record written on A is read on B", async () => {
    expect((await admin(a, "POST", "/admin/collections", { name: "notes", rules: { read: "public", create: "public" } })).status).toBe(201);
    const made = await call(b, "POST", "/notes", { body: { title: "from B" } });
    expect(made.status).toBe(201);
    const onA = await call(a, "POST", "/notes", { body: { title: "from A", words: 3 } });
    expect(onA.status).toBe(201);
    const read = await call(b, "GET", `/notes/${onA.body._id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ title: "from A", words: 3 });
    // A column A just added is in B's answers at once.
    expect((await call(b, "GET", `/notes/${made.body._id}`)).body).toMatchObject({ title: "from B", words: null });
    // Rules changed on A hold on B.
    expect((await admin(a, "PUT", "/admin/collections/notes/rules", { rules: { read: "disabled" } })).status).toBe(200);
    expect((await call(b, "GET", `/notes/${onA.body._id}`)).status).toBe(403);
    // An index made on A is known to B.
    expect((await admin(a, "POST", "/admin/collections/notes/indexes", { fields: ["title"], unique: true })).status).toBe(201);
    const again = await call(b, "POST", "/notes", { body: { title: "from A" } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("unique_violation");
    // Deleted on A: gone on B.
    expect((await admin(a, "DELETE", "/admin/collections/notes")).status).toBe(200);
    expect((await call(b, "GET", "/notes")).status).toBe(404);
  });

  test("a collection created with the CLI is usable on both nodes at their next request", async () => {
    const r = await runCli(bin, ["collections", "create", "cli_made", "--read", "public", "--create", "public", "--database", url]);
    expect(r.code).toBe(0);
    expect((await call(a, "POST", "/cli_made", { body: { n: 1 } })).status).toBe(201);
    expect((await call(b, "GET", "/cli_made")).body.items).toHaveLength(1);
  });

  test("a session revoked on A is 401 on B", async () => {
    const reg = await call(a, "POST", "/auth/register", { body: { email: "revoked@example.com", password: "correct horse 1" } });
    expect(reg.status).toBe(201);
    const token = reg.body.access_token;
    expect((await call(b, "GET", "/auth/me", { token })).status).toBe(200);
    expect((await call(a, "POST", "/auth/logout", { token })).status).toBe(200);
    expect((await call(b, "GET", "/auth/me", { token })).status).toBe(401);
  });

  test("ten wrong logins spread over A and B lock the account on both", async () => {
    const email = "locked@example.com";
    const password = "correct horse 2";
    expect((await call(b, "POST", "/auth/register", { body: { email, password } })).status).toBe(201);
    for (let i = 0; i < 10; i++) {
      const r = await call(i % 2 ? a : b, "POST", "/auth/login", { body: { email, password: "wrong password" } });
      expect(r.status).toBe(401);
    }
    for (const node of [a, b]) {
      const r = await call(node, "POST", "/auth/login", { body: { email, password } });
      expect(r.status).toBe(429);
      expect(r.body.code).toBe("account_locked");
    }
  });

  test("settings changed on B hold on A", async () => {
    expect((await admin(b, "PATCH", "/admin/settings", { registration_open: false, app_name: "two nodes" })).status).toBe(200);
    expect((await admin(a, "GET", "/admin/settings")).body).toMatchObject({ registration_open: false, app_name: "two nodes" });
    const r = await call(a, "POST", "/auth/register", { body: { email: "late@example.com", password: "correct horse 3" } });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("registration_closed");
    expect((await admin(b, "PATCH", "/admin/settings", { registration_open: true })).status).toBe(200);
    expect((await call(a, "POST", "/auth/register", { body: { email: "late@example.com", password: "correct horse 3" } })).status).toBe(201);
  });

  test("a realtime subscriber on B gets A's writes, each once and in order; A's own subscriber gets them once too", async () => {
    expect((await admin(a, "POST", "/admin/collections", { name: "live", rules: { read: "public", create: "public", update: "public" } })).status).toBe(201);
    const streams = await Promise.all(
      [b, a].map((node) => follow(`${node.url}/api/v1/realtime?subscribe=live`, { authorization: `Bearer ${secret}` })),
    );
    for (const s of streams) {
      expect(s.response.status).toBe(200);
      await s.clientId();
    }
    const first = await call(a, "POST", "/live", { body: { n: 1 } });
    expect((await call(a, "PATCH", `/live/${first.body._id}`, { body: { n: 2 } })).status).toBe(200);
    // A record too large for one change notice is read again by the receiving node.
    const big = "x".repeat(20_000);
    const large = await call(a, "POST", "/live", { body: { n: 3, text: big } });
    expect(large.status).toBe(201);
    // Written on B, seen on A: the relay works both ways.
    expect((await call(b, "POST", "/live", { body: { n: 4 } })).status).toBe(201);
    for (const s of streams) {
      const got = await s.waitChanges(4);
      // In the order A committed them; B's own write has no order relative to A's.
      const fromA = got.filter((m) => m.data.record.n <= 3);
      expect(fromA.map((m) => [m.event, m.data.record.n])).toEqual([["create", 1], ["update", 2], ["create", 3]]);
      expect(fromA[2].data.record.text === big).toBe(true);
      expect(got.map((m) => m.data.record.n).sort()).toEqual([1, 2, 3, 4]);
      expect(got.every((m) => m.data.collection === "live")).toBe(true);
    }
    // Nothing arrives twice: a marker written last is the fifth event on both streams.
    await call(b, "POST", "/live", { body: { n: 5 } });
    for (const s of streams) {
      await waitFor(() => s.changes().some((m) => m.data.record.n === 5), { what: "the marker" });
      expect(s.changes()).toHaveLength(5);
    }
    for (const s of streams) s.close();
  });

  test("events of a record too large for a notice carry the record as each change left it", async () => {
    const fields = [{ name: "v", type: "text" }, { name: "text", type: "text" }];
    expect((await admin(a, "POST", "/admin/collections", { name: "huge", fields, rules: { read: "public", create: "public", update: "public", delete: "public" } })).status).toBe(201);
    // Subscribed before the record is made: a change committed on another node just before a stream's topics are
    // set may reach it or not (its notice may still be on its way), so the create is in the stream, first.
    const stream = await follow(`${b.url}/api/v1/realtime`, { authorization: `Bearer ${secret}` });
    expect((await call(b, "POST", "/realtime", { token: secret, body: { client_id: await stream.clientId(), subscriptions: ["huge", { collection: "huge", filter: "v:eq:a" }] } })).status).toBe(200);
    const made = await call(a, "POST", "/huge", { body: { v: "first", text: "y".repeat(9_000) } });
    expect(made.status).toBe(201);
    // One transaction changes it twice, then deletes it: each event on B carries the state of its own change.
    const id = made.body._id;
    const operations = [
      { op: "update", id, data: { v: "a" } },
      { op: "update", id, data: { v: "b" } },
      { op: "delete", id },
    ];
    expect((await admin(a, "POST", "/huge/batch", { operations })).status).toBe(200);
    const got = await stream.waitChanges(4);
    expect(got.map((m) => [m.event, m.data.record.v, m.data.record._deleted_at === null, m.data.record.text.length])).toEqual([
      ["create", "first", true, 9_000],
      ["update", "a", true, 9_000],
      ["update", "b", true, 9_000],
      ["delete", "b", false, 9_000],
    ]);
    stream.close();
  });

  test("a soft delete and a hard delete made on B reach a subscriber on A", async () => {
    expect((await admin(a, "POST", "/admin/collections", { name: "gone", rules: { read: "public", delete: "public" } })).status).toBe(201);
    const made = await admin(a, "POST", "/gone", { title: "to be removed" });
    expect(made.status).toBe(201);
    const s = await follow(`${a.url}/api/v1/realtime?subscribe=gone`, { authorization: `Bearer ${secret}` });
    await s.clientId();
    expect((await call(b, "DELETE", `/gone/${made.body._id}`)).status).toBe(200);
    expect((await admin(b, "DELETE", `/admin/collections/gone/records/${made.body._id}`)).status).toBe(200);
    const [soft, hard] = await s.waitChanges(2);
    expect([soft.event, hard.event]).toEqual(["delete", "delete"]);
    expect(soft.data.record).toMatchObject({ _id: made.body._id, title: "to be removed" });
    expect(typeof soft.data.record._deleted_at).toBe("number");
    expect(hard.data.record).toEqual({ _id: made.body._id });
    s.close();
  });

  test("POST /realtime through B sets the topics of a stream held by A, with B's caller as its identity", async () => {
    expect((await admin(b, "POST", "/admin/collections", { name: "owned", rules: { read: "owner", create: "authenticated" } })).status).toBe(201);
    const owner = await call(b, "POST", "/auth/register", { body: { email: "owner@example.com", password: "correct horse 5" } });
    const other = await call(b, "POST", "/auth/register", { body: { email: "other@example.com", password: "correct horse 6" } });
    // A bare stream, as a browser's EventSource opens it, on A; its topics set through B.
    const s = await follow(`${a.url}/api/v1/realtime`);
    const clientId = await s.clientId();
    const set = await call(b, "POST", "/realtime", { body: { client_id: clientId, subscriptions: ["owned"] }, token: owner.body.access_token });
    expect(set).toEqual({ status: 200, body: { ok: true, subscriptions: ["owned"] } });
    // The stream is the owner's now: another user may not take it; an id A does not hold is 404.
    const taken = await call(b, "POST", "/realtime", { body: { client_id: clientId, subscriptions: ["owned"] }, token: other.body.access_token });
    expect(taken.status).toBe(403);
    expect(taken.body.code).toBe("forbidden");
    const unknown = await call(b, "POST", "/realtime", { body: { client_id: `${clientId.split(".")[0]}.nope`, subscriptions: [] } });
    expect(unknown.status).toBe(404);
    // An id no live node holds (a node gone, a made-up one): 404 at once, not after the forward's 5 s wait.
    const started = performance.now();
    const gone = await call(b, "POST", "/realtime", { body: { client_id: "nosuchnode.nope", subscriptions: [] } });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe("not_found");
    expect(performance.now() - started).toBeLessThan(2_000);
    const bad = await call(b, "POST", "/realtime", { body: { client_id: clientId, subscriptions: ["no_such_collection"] }, token: owner.body.access_token });
    expect(bad.status).toBe(400);
    // Written on B by each user: A's stream gets the owner's record only (the read rule is checked on A).
    await call(b, "POST", "/owned", { body: { mine: false }, token: other.body.access_token });
    const mine = await call(b, "POST", "/owned", { body: { mine: true }, token: owner.body.access_token });
    const [e] = await s.waitChanges(1);
    expect(e.data.record).toMatchObject({ _id: mine.body._id, mine: true });
    // The owner logs out on B: the stream on A ends.
    expect((await call(b, "POST", "/auth/logout", { token: owner.body.access_token })).status).toBe(200);
    await waitFor(() => s.ended, { what: "the stream to end after logout" });
    expect(s.changes()).toHaveLength(1);
  });

  test("the realtime per-address limits count the streams and topics of both nodes", async () => {
    const open = async (node: ServerProcess, query = "") => follow(`${node.url}/api/v1/realtime${query}`);
    for (const name of ["lim_a", "lim_b"]) expect((await admin(a, "POST", "/admin/collections", { name, rules: { read: "public" } })).status).toBe(201);
    expect((await admin(b, "PATCH", "/admin/settings", { realtime_max_streams_per_ip: 2, realtime_max_topics_per_ip: 3 })).status).toBe(200);
    const held: SseClient[] = [];
    try {
      // Streams other tests closed may take a moment to be forgotten: open until this address holds exactly ours.
      await waitFor(async () => {
        for (const s of held.splice(0)) s.close();
        const first = await open(a);
        held.push(first);
        if (first.response.status !== 200) return false;
        const second = await open(b, "?subscribe=lim_a,lim_b");
        held.push(second);
        return second.response.status === 200;
      }, { what: "two streams under the limit" });
      // One stream on each node: a third on either is over the limit, though each node holds only one.
      for (const node of [a, b]) {
        const third = await open(node);
        held.push(third);
        expect(third.response.status).toBe(429);
        expect((await third.response.json()).code).toBe("rate_limited");
      }
      // Two topics held on B: two more for A's stream pass the limit of 3, one does not.
      const clientId = await held[0].clientId();
      const over = await call(a, "POST", "/realtime", { body: { client_id: clientId, subscriptions: ["lim_a", "lim_b"] } });
      expect(over.status).toBe(429);
      expect((await call(a, "POST", "/realtime", { body: { client_id: clientId, subscriptions: ["lim_a"] } })).status).toBe(200);
      // B's stream ends: A may open another.
      held[1].close();
      const again = await waitFor(async () => {
        const s = await open(a);
        held.push(s);
        return s.response.status === 200 ? s : null;
      }, { what: "a stream once B's ended" });
      expect(again.response.status).toBe(200);
    } finally {
      for (const s of held) s.close();
      await admin(b, "PATCH", "/admin/settings", { realtime_max_streams_per_ip: 100, realtime_max_topics_per_ip: 1000 });
    }
  });

  test("the admin secret rotated on A is refused on B", async () => {
    // An admin stream held by B, bound through A with the secret: it ends with the rotation.
    const s = await follow(`${b.url}/api/v1/realtime`);
    const bound = await call(a, "POST", "/realtime", { body: { client_id: await s.clientId(), subscriptions: [] }, token: secret });
    expect(bound.status).toBe(200);
    const rotated = await admin(a, "POST", "/admin/rotate-secret");
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.secret;
    expect((await call(b, "GET", "/admin/settings", { token: secret })).status).toBe(401);
    expect((await call(b, "GET", "/admin/settings", { token: fresh })).status).toBe(200);
    await waitFor(() => s.ended, { what: "the admin stream to end after the rotation" });
    // And the CLI rotates it for both nodes too.
    const r = await runCli(bin, ["admin", "rotate-secret", "--database", url]);
    expect(r.code).toBe(0);
    const third = r.stdout.trim();
    for (const node of [a, b]) {
      expect((await call(node, "GET", "/admin/settings", { token: fresh })).status).toBe(401);
      expect((await call(node, "GET", "/admin/settings", { token: third })).status).toBe(200);
    }
    secret = third;
  });
});
