import { SQL } from "bun";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { postgresAvailable, startCluster, warnIfSkipped, type PgCluster } from "../helpers/postgres.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { SseClient, type SseMessage } from "../helpers/sse.ts";
import { waitFor } from "../helpers/wait.ts";

// Three `baas serve` processes on one PostgreSQL database of a throwaway cluster, which is stopped and started:
// a scale-out that heals (realtime after an outage, readiness, waiting for the database, idempotent retries,
// resume on another node). Time bounds are measured from the moment the event happens (the cluster stopped,
// the cluster answering again), with slack for a busy shared machine, noted where they are asserted.

setDefaultTimeout(180_000);
warnIfSkipped();

/** Slack on every time bound, for a machine busy with other test runs (the bound itself is the target). */
const SLACK_MS = 2_000;

let cluster: PgCluster;
let url: string;
let nodes: ServerProcess[] = [];

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

async function call(node: ServerProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const h: Record<string, string> = { authorization: `Bearer ${ADMIN_SECRET}`, ...headers };
  if (body !== undefined) h["content-type"] = "application/json";
  const res = await fetch(`${node.url}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

/** A client following `notes` on one node that opens its stream again whenever it ends (as EventSource does). */
class Follower {
  /** Every message of every stream, with when it arrived. */
  readonly got: { at: number; m: SseMessage }[] = [];
  stream: SseClient | null = null;
  private stopped = false;
  private seen = 0;
  private readonly loop: Promise<void>;

  constructor(readonly node: ServerProcess) {
    this.loop = this.run();
  }

  private async run() {
    while (!this.stopped) {
      let s: SseClient;
      try {
        s = await SseClient.open(`${this.node.url}/api/v1/realtime?subscribe=notes`);
      } catch {
        await Bun.sleep(50);
        continue;
      }
      this.stream = s;
      this.seen = 0;
      while (!this.stopped && !s.ended) {
        this.take(s);
        await Bun.sleep(5);
      }
      this.take(s);
      s.close();
      if (!this.stopped) await Bun.sleep(50);
    }
  }

  private take(s: SseClient) {
    for (; this.seen < s.messages.length; this.seen++) this.got.push({ at: Date.now(), m: s.messages[this.seen]! });
  }

  /** When the first message matching `pred` came after `since`, if it came. */
  firstAfter(since: number, pred: (m: SseMessage) => boolean): number | undefined {
    return this.got.find((g) => g.at >= since && pred(g.m))?.at;
  }

  async stop() {
    this.stopped = true;
    this.stream?.close();
    await this.loop;
  }
}

describe.skipIf(!postgresAvailable)("three nodes on one PostgreSQL database", () => {
  beforeAll(async () => {
    cluster = await startCluster();
    url = await cluster.createDatabase();
    nodes = await Promise.all([0, 1, 2].map(() => spawnServer({ args: ["--database", url] })));
    expect((await call(nodes[0]!, "POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "public", create: "public" } })).status).toBe(201);
  });

  afterAll(async () => {
    if (process.env.SHOW_NODE_LOGS) for (const n of nodes) console.error(n.stderr());
    await Promise.all(nodes.map((n) => n.cleanup()));
    cluster?.destroy();
  });

  test("100 creates, each retried with one Idempotency-Key on all three nodes at once, make one record each", async () => {
    const ids: string[] = [];
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const n = round * 10 + i;
          const answers = await Promise.all(
            nodes.map((node) => call(node, "POST", "/api/v1/notes", { title: `idem ${n}` }, { "idempotency-key": `scale-out-${n}` })),
          );
          // One did the work; the others waited for it and got its answer.
          for (const a of answers) expect([a.status, a.body._id]).toEqual([201, answers[0]!.body._id]);
          expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(2);
          ids.push(answers[0]!.body._id);
        }),
      );
    }
    expect(new Set(ids).size).toBe(100);
    const list = await call(nodes[1]!, "GET", "/api/v1/notes?limit=1&filter=" + encodeURIComponent("title:like:idem %"));
    expect(list.body.total).toBe(100);
  });

  test("a stream moved from node A to node B with Last-Event-ID receives the events it missed, in the order every node has", async () => {
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const onA = await SseClient.open(`${a.url}/api/v1/realtime?subscribe=notes`);
    // A stream that stays on C: every node delivers the events in one order.
    const onC = await SseClient.open(`${c.url}/api/v1/realtime?subscribe=notes`);
    await Promise.all([onA.clientId(), onC.clientId()]);
    expect((await call(c, "POST", "/api/v1/notes", { title: "seen on A" })).status).toBe(201);
    const seen = await onA.next((m) => m.event !== "connect" && m.data?.record?.title === "seen on A");
    onA.close();
    // Missed while the client moves: written on every node.
    const missed: string[] = [];
    for (const node of [a, c, b, a]) {
      const r = await call(node, "POST", "/api/v1/notes", { title: `missed ${missed.length}` });
      expect(r.status).toBe(201);
      missed.push(r.body._id);
    }
    const onB = await SseClient.open(`${b.url}/api/v1/realtime?subscribe=notes`, { "last-event-id": seen.id! });
    try {
      const got = (await onB.waitChanges(missed.length)).map((m) => m.data.record._id);
      // The database's order of the events (their notices go out after each commit, each node on its own), the same on C.
      expect([...got].sort()).toEqual([...missed].sort());
      const onCAfterSeen = (await onC.waitChanges(missed.length + 1)).map((m) => m.data.record._id);
      expect(onCAfterSeen.slice(onCAfterSeen.indexOf(seen.data.record._id) + 1)).toEqual(got);
      expect(onB.messages.some((m) => m.event === "reset")).toBe(false);
      // Live events follow on.
      const live = await call(a, "POST", "/api/v1/notes", { title: "live after resume" });
      expect((await onB.waitChanges(missed.length + 1)).at(-1)!.data.record._id).toBe(live.body._id);
    } finally {
      onB.close();
      onC.close();
    }
  });

  test("during a rolling upgrade, the notices of a node that does not number its events still reach every stream", async () => {
    const made = await call(nodes[0]!, "POST", "/api/v1/notes", { title: "from an older node" });
    const streams = await Promise.all(nodes.map((n) => SseClient.open(`${n.url}/api/v1/realtime?subscribe=notes`)));
    try {
      await Promise.all(streams.map((s) => s.clientId()));
      const sql = new SQL({ url, max: 1 });
      try {
        // The notice as the version before sent it: no `g`.
        const notice = { n: "an-older-node", s: 1, e: [{ c: "notes", a: "update", i: made.body._id, t: Date.now(), b: null, r: { ...made.body, title: "updated by an older node" } }] };
        await sql`SELECT pg_notify('baas_changes', ${JSON.stringify(notice)})`;
      } finally {
        await sql.close();
      }
      for (const s of streams) expect((await s.next((m) => m.event === "update")).data.record.title).toBe("updated by an older node");
      // Numbered events go on after it.
      const next = await call(nodes[1]!, "POST", "/api/v1/notes", { title: "numbered after" });
      for (const s of streams) expect((await s.next((m) => m.event === "create" && m.data.record._id === next.body._id)).id).toBeTruthy();
    } finally {
      for (const s of streams) s.close();
    }
  });

  test("PostgreSQL stopped for 10 s: every stream reset at once, /ready 503 and /health 200 meanwhile, a node started during the outage waits and serves, events flow again soon after", async () => {
    const followers = nodes.map((n) => new Follower(n));
    let late: ServerProcess | null = null;
    try {
      // Every stream follows every node's writes before the outage (once open: a write before that is not its to get).
      for (const f of followers) await waitFor(() => f.got.some((g) => g.m.event === "connect"), { what: "every stream to open" });
      const before = await call(nodes[2]!, "POST", "/api/v1/notes", { title: "before the outage" });
      for (const f of followers) await waitFor(() => f.got.some((g) => g.m.data?.record?._id === before.body._id), { what: "the write before the outage on every node" });

      const health: number[] = [];
      let probing = true;
      const probe = (async () => {
        while (probing) {
          for (const n of nodes) health.push((await fetch(`${n.url}/health`)).status);
          await Bun.sleep(200);
        }
      })();

      const stopAsked = Date.now();
      cluster.stop();
      // pg_ctl -m fast returns once the server is gone: every listening connection was closed before that.
      const stopped = Date.now();
      // Every stream gets reset within 1 s of its listener dropping (+ slack), without waiting for the database.
      for (const f of followers) {
        const at = await waitFor(() => f.firstAfter(stopAsked, (m) => m.event === "reset" && m.data?.reason === "disconnected"), {
          what: "the reset of a stream as its node lost the database",
        });
        expect(at - stopped).toBeLessThan(1_000 + SLACK_MS);
      }
      // Readiness says the database is gone (the check's answer lives 1 s, and it waits 2 s at most).
      for (const n of nodes) {
        const ready = await waitFor(
          async () => {
            const r = await call(n, "GET", "/ready");
            return r.status === 503 ? r : null;
          },
          { what: "/ready to say 503 during the outage" },
        );
        expect(ready.body).toEqual({ error: "the database does not answer", code: "unavailable", reason: "database_unavailable" });
        expect(ready.headers.get("retry-after")).toBe("1");
      }
      // A node started 5 s before its database comes back: it waits instead of exiting.
      await Bun.sleep(Math.max(0, stopped + 5_000 - Date.now()));
      const lateStart = spawnServer({ args: ["--database", url, "--wait-for-database", "60"] });
      lateStart.catch(() => {});
      // The outage lasts a fixed time: that is the scenario, not a wait for something to happen.
      await Bun.sleep(Math.max(0, stopped + 10_000 - Date.now()));
      cluster.start();
      // pg_ctl -w returns once the server accepts connections.
      const back = Date.now();
      late = await lateStart;
      expect(late.stderr()).toContain("waiting for the database");

      // Writes go on from every node; each node's stream gets another node's write within 2 s of the database's
      // return (+ slack). A stream opened before its node listened again is reset ("reconnected") and reopened.
      let k = 0;
      let writing = true;
      const writer = (async () => {
        while (writing) {
          const node = nodes[k % 3]!;
          await call(node, "POST", "/api/v1/notes", { title: `after ${k}`, from: k % 3 }).catch(() => null);
          k++;
          await Bun.sleep(20);
        }
      })();
      try {
        for (const [i, f] of followers.entries()) {
          const at = await waitFor(() => f.firstAfter(back, (m) => m.event === "create" && typeof m.data?.record?.from === "number" && m.data.record.from !== i), {
            what: `node ${i} to deliver another node's write after the outage`,
          });
          expect(at - back).toBeLessThan(2_000 + SLACK_MS);
        }
      } finally {
        writing = false;
        await writer;
      }
      probing = false;
      await probe;
      expect(health.length).toBeGreaterThan(10);
      expect(health.every((s) => s === 200)).toBe(true);
      for (const n of [...nodes, late]) expect((await call(n, "GET", "/ready")).status).toBe(200);
      // An id from before the outage, on any node: nothing could be numbered while the database was down, so the
      // resume goes on with the writes after the return (or, had anything been missed, reset), never a gap.
      const beforeId = followers[0]!.got.find((g) => g.m.data?.record?._id === before.body._id)!.m.id!;
      for (const n of nodes) {
        const resumed = await SseClient.open(`${n.url}/api/v1/realtime?subscribe=notes`, { "last-event-id": beforeId });
        try {
          const first = await resumed.next((m) => m.event !== "connect");
          // (Which write after the return comes first is the database's order, not the order they were answered in.)
          if (first.event !== "reset") expect([first.event, first.data.record.title]).toEqual(["create", expect.stringMatching(/^after \d+$/)]);
        } finally {
          resumed.close();
        }
      }
      // The node that waited serves like the others.
      expect((await call(late, "POST", "/api/v1/notes", { title: "from the late node" })).status).toBe(201);
    } finally {
      await Promise.all(followers.map((f) => f.stop()));
      await late?.cleanup();
    }
  });
});
