import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer } from "../../src/server.ts";
import { ADMIN_SECRET, createCollection, patchSettings, registerUser } from "../helpers/app.ts";
import { startSmtpCapture, type SmtpCapture } from "../helpers/smtp.ts";
import { SseClient, createLiveApp, until, type LiveApp } from "../helpers/sse.ts";
import { waitFor } from "../helpers/wait.ts";
import { sessionIdOf } from "../helpers/fixtures.ts";

let t: LiveApp;
let smtp: SmtpCapture | null = null;
afterEach(async () => {
  await t.stop();
  await smtp?.close();
  smtp = null;
});

type User = Awaited<ReturnType<typeof registerUser>>;

/** Ways an identity ends; each must close the user's stream within one second. */
const endings: [string, (u: User) => Promise<unknown>][] = [
  ["an admin revoking the session", async (u) => {
    const sessions = await t.admin("GET", `/api/v1/admin/users/${u.id}/sessions`);
    for (const s of sessions.body.items) expect((await t.admin("DELETE", `/api/v1/admin/sessions/${s.id}`)).status).toBe(200);
  }],
  ["logout", (u) => t.req("POST", "/api/v1/auth/logout", { token: u.token })],
  ["logout-all", (u) => t.req("POST", "/api/v1/auth/logout-all", { token: u.token })],
  ["deleting the user", (u) => t.admin("DELETE", `/api/v1/admin/users/${u.id}`)],
  ["a password reset", async (u) => {
    await t.req("POST", "/api/v1/auth/forgot-password", { body: { email: u.body.user.email } });
    const mail = await until(() => smtp!.to(u.body.user.email).find((m) => m.text.includes("/auth/reset-password?token=")), undefined, "the reset mail");
    const token = decodeURIComponent(/[?&]token=([A-Za-z0-9_%-]+)/.exec(mail.text)![1]);
    expect((await t.req("POST", "/api/v1/auth/reset-password", { body: { token, password: "another-password-1" } })).status).toBe(200);
  }],
];

/** How long a change takes to reach `stream` on this machine now: the baseline of "within 1 s". */
async function deliveryMs(stream: SseClient): Promise<number> {
  const before = stream.changes().length;
  const started = Date.now();
  expect((await t.admin("POST", "/api/v1/posts", { title: "baseline" })).status).toBe(201);
  await stream.waitChanges(before + 1);
  return Date.now() - started;
}

/**
 * CONTRACT's "within 1 second", measured against this machine: 1 s where an event is delivered in a few
 * milliseconds; on a busy machine, as many deliveries' time as make a second on a quiet one. A stream
 * closed by a periodic check (seconds) instead of at once fails either way.
 */
const withinOneSecond = (baselineMs: number) => Math.max(1_000, 20 * baselineMs);

describe("identity ends, stream ends", () => {
  for (const [name, end] of endings) {
    test(`${name} closes the stream within 1 s`, async () => {
      smtp = await startSmtpCapture();
      t = createLiveApp({ env: { SMTP_URL: smtp.url } });
      await createCollection(t, "posts");
      const u = await registerUser(t, "user@example.com");
      const s = await t.stream();
      expect((await t.subscribe(await s.clientId(), ["posts"], u.token)).status).toBe(200);
      const other = await t.stream({ query: "?subscribe=posts" });
      await other.clientId();
      const baseline = await deliveryMs(other);
      const res = await end(u);
      const done = Date.now();
      expect(res === undefined || (res as { status: number }).status === 200).toBe(true);
      await until(() => s.ended, undefined, "the stream to end");
      expect(s.endedAt - done).toBeLessThan(withinOneSecond(baseline));
      expect(other.ended).toBe(false);
    });
  }

  test("an access token closes its stream at exp; a revoked API key closes its stream", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const u = await registerUser(t, "user@example.com");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "k" } });
    const byToken = await t.stream({ token: u.token, query: "?subscribe=posts" });
    const byKey = await t.stream({ headers: { "x-api-key": key.body.key }, query: "?subscribe=posts" });
    await byToken.clientId();
    await byKey.clientId();
    t.clock.advance(899_000);
    await t.admin("POST", "/api/v1/posts", { n: 1 });
    await byToken.waitChanges(1);
    expect(byToken.ended).toBe(false);
    t.clock.advance(2_000);
    await until(() => byToken.ended, undefined, "the expired stream to end");
    expect(byKey.ended).toBe(false);
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${key.body.id}`, { token: (await login(t)).access_token })).status).toBe(200);
    await until(() => byKey.ended, undefined, "the API key stream to end");
  });
});

describe("identities checked again only when something that ends them changed", () => {
  test("a session revoked or deleted by direct SQL (another process) closes its stream; the others stay", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const [a, b, c] = [await registerUser(t, "a@example.com"), await registerUser(t, "b@example.com"), await registerUser(t, "c@example.com")];
    const [sa, sb, sc] = [await t.stream({ token: a.token, query: "?subscribe=posts" }), await t.stream({ token: b.token, query: "?subscribe=posts" }), await t.stream({ token: c.token, query: "?subscribe=posts" })];
    for (const s of [sa, sb, sc]) await s.clientId();
    // Several checks pass with nothing changed: the streams stay.
    await Bun.sleep(1_000);
    expect([sa.ended, sb.ended, sc.ended]).toEqual([false, false, false]);
    await t.db.run("UPDATE _sessions SET revoked_at = ? WHERE id = ?", [t.clock.now(), sessionIdOf(a.token)]);
    await until(() => sa.ended, undefined, "the revoked session's stream to end");
    await t.db.run("DELETE FROM _refresh_tokens WHERE session_id = ?", [sessionIdOf(b.token)]);
    await t.db.run("DELETE FROM _sessions WHERE id = ?", [sessionIdOf(b.token)]);
    await until(() => sb.ended, undefined, "the deleted session's stream to end");
    expect((await t.admin("POST", "/api/v1/posts", { title: "after" })).status).toBe(201);
    await sc.waitChanges(1);
    expect(sc.ended).toBe(false);
  });

  test("a session that expires before its access token closes its stream at the session's end", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const u = await registerUser(t, "user@example.com");
    const s = await t.stream({ token: u.token, query: "?subscribe=posts" });
    await s.clientId();
    await t.db.run("UPDATE _sessions SET expires_at = ? WHERE id = ?", [t.clock.now() + 60_000, sessionIdOf(u.token)]);
    // Checked (alive until then) after that change, then nothing changes in the database while time passes.
    await Bun.sleep(1_000);
    expect(s.ended).toBe(false);
    t.clock.advance(61_000);
    await until(() => s.ended, undefined, "the expired session's stream to end");
  });
});

async function login(app: LiveApp) {
  return (await app.req("POST", "/api/v1/auth/login", { body: { email: "user@example.com", password: "password123" } })).body;
}

describe("resume with Last-Event-ID", () => {
  test("a reconnect replays the missed events, re-checked against the read rule, then goes on live", async () => {
    t = createLiveApp();
    await createCollection(t, "notes", { read: "owner", create: "authenticated" });
    const alice = await registerUser(t, "alice@example.com");
    const bob = await registerUser(t, "bob@example.com");
    const note = (u: User, title: string) => t.req("POST", "/api/v1/notes", { token: u.token, body: { title } });
    const first = await t.stream();
    expect((await t.subscribe(await first.clientId(), ["notes"], alice.token)).status).toBe(200);
    await note(alice, "a1");
    const [seen] = await first.waitChanges(1);
    first.close();
    await note(alice, "a2");
    await note(bob, "b1");
    await note(alice, "a3");
    // The browser flow: the reconnect sends Last-Event-ID, the page sets its topics again.
    const again = await t.stream({ headers: { "last-event-id": seen.id! } });
    expect((await t.subscribe(await again.clientId(), ["notes"], alice.token)).status).toBe(200);
    await note(alice, "a4");
    const events = await again.waitChanges(3);
    expect(events.map((e) => e.data.record.title)).toEqual(["a2", "a3", "a4"]);
    expect(again.messages[0].event).toBe("connect");
  });

  test("?last_event_id= resumes like the header (for a fresh EventSource), with ?subscribe= at once", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const first = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=posts" });
    await t.admin("POST", "/api/v1/posts", { title: "one" });
    const [seen] = await first.waitChanges(1);
    first.close();
    await t.admin("POST", "/api/v1/posts", { title: "two" });
    const again = await t.stream({ token: ADMIN_SECRET, query: `?subscribe=posts&last_event_id=${encodeURIComponent(seen.id!)}` });
    const [missed] = await again.waitChanges(1);
    expect(missed.data.record.title).toBe("two");
    expect(again.messages.map((m) => m.event)).toEqual(["connect", "create"]);
  });

  test("a new stream gets the changes after its subscribing POST, not those since it connected; a resume from its connect id gets both", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const s = await t.stream();
    const connect = await s.next((m) => m.event === "connect");
    const id = await s.clientId();
    const early = await t.admin("POST", "/api/v1/posts", { title: "early" });
    expect((await t.subscribe(id, [`posts/${early.body._id}`, "posts"])).status).toBe(200);
    expect((await t.admin("PATCH", `/api/v1/posts/${early.body._id}`, { title: "changed" })).status).toBe(200);
    const [first] = await s.waitChanges(1);
    expect([first.event, first.data.record.title]).toEqual(["update", "changed"]);
    await Bun.sleep(100);
    expect(s.changes().map((e) => e.event)).toEqual(["update"]);
    // A browser's EventSource reconnects with the last id it got (here the connect event's): it misses nothing.
    const again = await t.stream({ headers: { "last-event-id": connect.id! }, query: "?subscribe=posts" });
    const replayed = await again.waitChanges(2);
    expect(replayed.map((e) => [e.event, e.data.record.title])).toEqual([["create", "early"], ["update", "changed"]]);
  });

  test("an id that is no longer held (or from another server run) gets reset as the first event", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const s = await t.stream({ headers: { "last-event-id": "someotherepoch-12" }, query: "?subscribe=posts" });
    await s.next((m) => m.event === "connect");
    expect(s.messages.map((m) => m.event)).toEqual(["reset", "connect"]);
    await t.admin("POST", "/api/v1/posts", { title: "after" });
    expect((await s.waitChanges(1))[0].data.record.title).toBe("after");
  });
});

/** A child script: opens the stream, prints its status, waits for a line on stdin, then prints the stream's last 300 characters. */
const STALLED_READER = `
const [url, secret] = process.argv.slice(-2);
const res = await fetch(url, { headers: { authorization: "Bearer " + secret } });
console.log(res.status);
for await (const _ of console) break;
const text = await res.text();
process.stdout.write(text.slice(-300));
`;

describe("back-pressure and limits", () => {
  test("a stalled client gets reset and is closed while writes go on at full speed for the others", async () => {
    t = createLiveApp();
    await createCollection(t, "big");
    const healthy = await t.stream({ token: ADMIN_SECRET, query: "?subscribe=big" });
    const payload = "x".repeat(2000);
    const write = async () => {
      const started = Date.now();
      const res = await fetch(`${t.base}/api/v1/big/bulk`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
        body: JSON.stringify(Array.from({ length: 500 }, (_, n) => ({ n, payload }))),
      });
      expect(res.status).toBe(201);
      await res.arrayBuffer();
      return Date.now() - started;
    };
    // The baseline: what a write takes on this machine now, with only the healthy reader.
    const before: number[] = [];
    for (let i = 0; i < 4; i++) before.push(await write());
    // The stalled reader is another process: it opens the stream, then reads nothing until told to.
    const stalled = Bun.spawn([process.execPath, "-e", STALLED_READER, `${t.base}/api/v1/realtime?subscribe=big`, ADMIN_SECRET], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    });
    const out = stalled.stdout.getReader();
    expect(new TextDecoder().decode((await out.read()).value)).toBe("200\n");
    // More than the stream's 4 MiB buffer plus what the sockets hold.
    const rounds = 32;
    const during: number[] = [];
    for (let i = 0; i < rounds; i++) during.push(await write());
    await healthy.waitChanges((before.length + rounds) * 500);
    // Now the stalled client reads what it was sent: the stream ends, and its last event is reset.
    stalled.stdin.write("read\n");
    stalled.stdin.end();
    let tail = "";
    for (;;) {
      const { done, value } = await out.read();
      if (done) break;
      tail += new TextDecoder().decode(value);
    }
    expect(await stalled.exited).toBe(0);
    expect(tail.trimEnd().split("\n\n").at(-1)).toMatch(/^id: \S+\nevent: reset\ndata: \{"reason":"overflow"\}$/);
    expect(healthy.ended).toBe(false);
    // Writes went on at full speed: with the stalled reader they took about what they took without it,
    // measured in this test (a write held back by the stalled reader would wait for it: seconds, or for ever).
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    expect(median(during)).toBeLessThan(3 * median(before) + 100);
    expect(Math.max(...during)).toBeLessThan(20 * median(before) + 1_000);
    // 36 MB of records: seconds on a quiet machine, minutes on a busy one (every wait above is bounded by progress).
  }, 300_000);

  test("streams and topics per client address are limited by settings: 429 rate_limited with Retry-After", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    await patchSettings(t, { realtime_max_streams_per_ip: 2, realtime_max_topics_per_ip: 3 });
    const a = await t.stream();
    const b = await t.stream();
    const c = await t.stream();
    expect(c.response.status).toBe(429);
    expect(c.response.headers.get("retry-after")).toBeTruthy();
    expect(await c.response.json()).toEqual({ error: expect.any(String), code: "rate_limited" });
    const idA = await a.clientId();
    expect((await t.subscribe(idA, ["posts", "posts/1"])).status).toBe(200);
    const over = await t.subscribe(await b.clientId(), ["posts", "posts/2"]);
    expect(over.status).toBe(429);
    expect(over.body.code).toBe("rate_limited");
    expect((await t.subscribe(idA, ["posts", "posts/1", "posts/3"])).status).toBe(200);
    // A closed stream gives its slot back.
    a.close();
    await waitFor(
      async () => {
        const d = await SseClient.open(`${t.base}/api/v1/realtime`);
        d.close();
        return d.response.status === 200;
      },
      { intervalMs: 20, what: "the closed stream's slot to be given back" },
    );
  });
});

describe("limits under concurrency", () => {
  test("streams and topics opened at once from one address never pass the limits", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    await patchSettings(t, { realtime_max_streams_per_ip: 3, realtime_max_topics_per_ip: 4 });
    const streams = await Promise.all(Array.from({ length: 20 }, () => t.stream()));
    const opened = streams.filter((s) => s.response.status === 200);
    expect(opened.length).toBe(3);
    expect(streams.filter((s) => s.response.status === 429).length).toBe(17);
    for (const s of streams) if (s.response.status !== 200) s.close();
    // Topics set on the three streams at once, two each: four fit, so at most two of the calls succeed.
    const ids = await Promise.all(opened.map((s) => s.clientId()));
    const set = await Promise.all(ids.map((id) => t.subscribe(id, ["posts", `posts/${id}`])));
    expect(set.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    for (const s of opened) s.close();
    // Streams opened with topics at once: the topics count too.
    await waitFor(async () => {
      const d = await t.stream();
      d.close();
      return d.response.status === 200;
    }, { intervalMs: 20, what: "the closed streams' slots to be given back" });
    await waitFor(async () => {
      const all = await Promise.all(Array.from({ length: 6 }, () => t.stream({ query: "?subscribe=posts,posts/1" })));
      const ok = all.filter((s) => s.response.status === 200).length;
      const others = all.filter((s) => s.response.status !== 200 && s.response.status !== 429).length;
      for (const s of all) s.close();
      expect(others).toBe(0);
      expect(ok).toBeLessThanOrEqual(2);
      return ok === 2;
    }, { intervalMs: 20, what: "two streams with two topics each to open" });
  });
});

describe("churn", () => {
  test("streams closed by their clients give every slot back: the limit's worth opens again, twice over", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    await patchSettings(t, { realtime_max_streams_per_ip: 30 });
    for (let round = 0; round < 3; round++) {
      let open: SseClient[] = [];
      // Slots of the previous round are freed as the server notices each disconnect: retry until all 30
      // open, for as long as more open at each try.
      await waitFor(
        async () => {
          open.push(...(await Promise.all(Array.from({ length: 30 - open.length }, () => t.stream({ query: "?subscribe=posts" })))));
          const refused = open.filter((s) => s.response.status !== 200);
          open = open.filter((s) => s.response.status === 200);
          expect(refused.every((s) => s.response.status === 429)).toBe(true);
          return refused.length === 0;
        },
        { intervalMs: 20, what: "30 streams to open", progress: () => open.length },
      );
      await Promise.all(open.map((s) => s.clientId()));
      const over = await t.stream();
      expect(over.response.status).toBe(429);
      for (const s of open) s.close();
    }
  });
});

describe("graceful stop", () => {
  test("stopping the server ends every stream at once instead of waiting for them", async () => {
    t = createLiveApp();
    const dir = mkdtempSync(join(tmpdir(), "baas-rt-stop-"));
    const running = await startServer(loadConfig({ data: dir, port: 0, host: "127.0.0.1" }, { ADMIN_SECRET }), { log: memoryLogger() });
    try {
      const s = await SseClient.open(`${running.url}/api/v1/realtime`);
      await s.clientId();
      const started = Date.now();
      // Waiting for the stream would take the whole grace period; ending it at once takes a fraction of it.
      const graceMs = 30_000;
      await running.stop({ graceMs });
      expect(Date.now() - started).toBeLessThan(graceMs / 3);
      await until(() => s.ended, undefined, "the stream to end");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
