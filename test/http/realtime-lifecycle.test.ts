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
    const mail = await until(() => smtp!.to(u.body.user.email).find((m) => m.text.includes("/auth/reset-password?token=")), 5_000, "the reset mail");
    const token = decodeURIComponent(/[?&]token=([A-Za-z0-9_%-]+)/.exec(mail.text)![1]);
    expect((await t.req("POST", "/api/v1/auth/reset-password", { body: { token, password: "another-password-1" } })).status).toBe(200);
  }],
];

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
      const res = await end(u);
      const done = Date.now();
      expect(res === undefined || (res as { status: number }).status === 200).toBe(true);
      await until(() => s.ended, 2_000, "the stream to end");
      expect(s.endedAt - done).toBeLessThan(1_000);
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
    await until(() => byToken.ended, 2_000, "the expired stream to end");
    expect(byKey.ended).toBe(false);
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${key.body.id}`, { token: (await login(t)).access_token })).status).toBe(200);
    await until(() => byKey.ended, 2_000, "the API key stream to end");
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

  test("events between connect and the subscribing POST are not lost", async () => {
    t = createLiveApp();
    await createCollection(t, "posts");
    const s = await t.stream();
    const id = await s.clientId();
    await t.admin("POST", "/api/v1/posts", { title: "early" });
    expect((await t.subscribe(id, ["posts"])).status).toBe(200);
    const [ev] = await s.waitChanges(1);
    expect(ev.data.record.title).toBe("early");
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
    // The stalled reader is another process: it opens the stream, then reads nothing until told to.
    const stalled = Bun.spawn([process.execPath, "-e", STALLED_READER, `${t.base}/api/v1/realtime?subscribe=big`, ADMIN_SECRET], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    });
    const out = stalled.stdout.getReader();
    expect(new TextDecoder().decode((await out.read()).value)).toBe("200\n");
    // More than the stream's 4 MiB buffer plus what the sockets hold.
    const payload = "x".repeat(2000);
    const rounds = 24;
    const started = Date.now();
    for (let i = 0; i < rounds; i++) {
      const res = await fetch(`${t.base}/api/v1/big/bulk`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
        body: JSON.stringify(Array.from({ length: 500 }, (_, n) => ({ n, payload }))),
      });
      expect(res.status).toBe(201);
      await res.arrayBuffer();
    }
    const writeMs = Date.now() - started;
    await healthy.waitChanges(rounds * 500, 30_000);
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
    expect(tail.trimEnd().split("\n\n").at(-1)).toBe('event: reset\ndata: {"reason":"overflow"}');
    expect(healthy.ended).toBe(false);
    expect(writeMs).toBeLessThan(30_000);
  });

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
    const deadline = Date.now() + 3_000;
    for (;;) {
      const d = await SseClient.open(`${t.base}/api/v1/realtime`);
      d.close();
      if (d.response.status === 200) break;
      expect(Date.now()).toBeLessThan(deadline);
      await Bun.sleep(20);
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
      await running.stop();
      expect(Date.now() - started).toBeLessThan(3_000);
      await until(() => s.ended, 2_000, "the stream to end");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
