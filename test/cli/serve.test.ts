import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

// `baas serve` as a real process: first start, durability across kill -9, graceful stop.

const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.cleanup();
});

async function start(opts: Parameters<typeof spawnServer>[0] = {}) {
  const s = await spawnServer(opts);
  servers.push(s);
  return s;
}

const json = (secret = ADMIN_SECRET) => ({ authorization: `Bearer ${secret}`, "content-type": "application/json" });

async function createCollection(s: ServerProcess, name: string, secret = ADMIN_SECRET) {
  const res = await fetch(`${s.url}/api/v1/admin/collections`, {
    method: "POST",
    headers: json(secret),
    body: JSON.stringify({ name, rules: { create: "public" } }),
  });
  expect(res.status).toBe(201);
}

/**
 * True once the server has read everything sent to it so far on the connection from `clientPort`:
 * the kernel lists that connection's server end as established with an empty receive queue
 * (Linux /proc/net/tcp: local and remote address as hex ip:port, state 01, then tx:rx queue sizes).
 */
function serverHasRead(serverPort: number, clientPort: number): boolean {
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const [, local, remote, state, queues] = line.trim().split(/\s+/);
      if (!local || !remote || !queues) continue;
      const port = (addr: string) => parseInt(addr.slice(addr.lastIndexOf(":") + 1), 16);
      if (port(local) === serverPort && port(remote) === clientPort && state === "01") return parseInt(queues.split(":")[1]!, 16) === 0;
    }
  }
  return false;
}

/**
 * Sends the head and the first part of a POST over a raw socket and waits until the server has read
 * them (so the request is in flight); `finish()` sends the rest and resolves with the response text.
 */
function slowPost(port: number, path: string, body: string) {
  const socket = connect(port, "127.0.0.1");
  let response = "";
  const done = new Promise<string>((resolve, reject) => {
    socket.on("data", (d) => (response += d.toString()));
    socket.on("end", () => resolve(response));
    socket.on("close", () => resolve(response));
    socket.on("error", reject);
  });
  const ready = new Promise<void>((resolve) => socket.on("connect", () => resolve()));
  const half = Math.floor(body.length / 2);
  return {
    async begin() {
      await ready;
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n` +
          body.slice(0, half),
      );
      await waitFor(() => serverHasRead(port, socket.localPort!), { what: "the server to read the request head" });
    },
    async finish() {
      socket.write(body.slice(half));
      return done;
    },
  };
}

describe("baas serve", () => {
  test("the first start without ADMIN_SECRET prints a generated secret once; it keeps working after a restart", async () => {
    const s = await start({ env: { ADMIN_SECRET: "" } });
    const m = /Admin secret \(shown once, store it now\):\s+(\S+)/.exec(s.stderr());
    expect(m).not.toBeNull();
    const secret = m![1];
    const res = await fetch(`${s.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(200);
    expect(await s.stop()).toBe(0);

    const again = await start({ dir: s.dir, env: { ADMIN_SECRET: "" } });
    expect(again.stderr()).not.toContain("Admin secret");
    expect((await fetch(`${again.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    expect(await again.stop()).toBe(0);
    // The SQLite file is in the data directory; on PostgreSQL the data lives in the database.
    if (!onPostgres) expect(existsSync(join(s.dir, "baas.db"))).toBe(true);
  });

  test("a record acknowledged with 201 survives kill -9 and a restart on the same data dir", async () => {
    const s = await start();
    await createCollection(s, "durable");
    const res = await fetch(`${s.url}/api/v1/durable`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ title: "must survive", n: 42 }),
    });
    expect(res.status).toBe(201);
    const record = (await res.json()) as { _id: string };
    await s.kill9();
    expect(s.proc.signalCode).toBe("SIGKILL");

    const again = await start({ dir: s.dir });
    const got = await fetch(`${again.url}/api/v1/durable/${record._id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(record);
    await again.stop();
  });

  test.each([["SIGTERM"], ["SIGINT"]] as const)(
    "%s lets an in-flight request finish, then closes the database and exits 0",
    async (signal) => {
      const s = await start();
      await createCollection(s, "inflight");
      const post = slowPost(s.port, "/api/v1/inflight", JSON.stringify({ title: "in flight", pad: "x".repeat(4000) }));
      await post.begin();
      s.proc.kill(signal);
      await waitFor(() => s.stderr().includes(`received ${signal}`), { what: `the server to log ${signal}` });
      const raw = await post.finish();
      expect(raw).toStartWith("HTTP/1.1 201");
      const record = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)) as { _id: string; title: string };
      expect(record.title).toBe("in flight");
      expect(await s.proc.exited).toBe(0);
      expect(s.stderr()).toContain(`received ${signal}`);
      // A clean close checkpoints the write-ahead log into baas.db.
      const wal = join(s.dir, "baas.db-wal");
      expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
      // The port is closed.
      expect(await fetch(`${s.url}/health`).then(() => "open", () => "closed")).toBe("closed");

      const again = await start({ dir: s.dir });
      expect((await fetch(`${again.url}/api/v1/inflight/${record._id}`)).status).toBe(200);
      await again.stop();
    },
  );

  test("a request that never finishes does not hold the stop: a second SIGTERM drops it and the process still exits 0", async () => {
    const s = await start();
    await createCollection(s, "stuck");
    const post = slowPost(s.port, "/api/v1/stuck", JSON.stringify({ title: "never finished" }));
    await post.begin();
    s.proc.kill("SIGTERM");
    await waitFor(() => s.stderr().includes("received SIGTERM"), { what: "the server to log SIGTERM" });
    // A check that something does NOT happen: the unfinished request keeps the process from exiting for a while.
    await Bun.sleep(500);
    expect(s.proc.exitCode).toBeNull();
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    expect(s.stderr()).toContain("received SIGTERM again");
    const wal = join(s.dir, "baas.db-wal");
    expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
  });

  test("--trust-proxy: a request from a listed proxy counts against its X-Forwarded-For client; a bad entry exits 2", async () => {
    const s = await start({ args: ["--trust-proxy", "10.0.0.0/8, 127.0.0.1"] });
    const guess = (xff: string, secret: string) => fetch(`${s.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}`, "x-forwarded-for": xff } });
    for (let i = 0; i < 10; i++) expect((await guess(`192.0.2.${i}, 203.0.113.5`, "wrong-guess-at-the-secret")).status).toBe(401);
    expect((await guess("203.0.113.5", ADMIN_SECRET)).status).toBe(429);
    expect((await guess("198.51.100.7", ADMIN_SECRET)).status).toBe(200);
    await s.stop();
    const bad = Bun.spawn([process.execPath, join(import.meta.dir, "../../cli/index.ts"), "serve", "--port", "0", "--data", s.dir, "--trust-proxy", "127.0.0.1,nginx"], { stdout: "pipe", stderr: "pipe" });
    expect(await bad.exited).toBe(2);
    expect(await new Response(bad.stderr).text()).toContain('TRUST_PROXY: "nginx" is not an IP address or CIDR range');
  });
});
