import type { AppContext } from "../context.ts";
import { findCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { randomToken } from "../crypto.ts";
import { AppError, badRequest, forbidden, notFound } from "../errors.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { canRead } from "../records/access.ts";
import type { RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { relationsFrom } from "../relations/catalog.ts";
import { getSetting } from "../settings/settings.ts";
import { endedIdentities, type Identity } from "./identity.ts";
import { ReplayBuffer, type HeldEvent } from "./replay.ts";
import { SseSink, sseFrame } from "./sse.ts";
import { parseTopics, type Topic } from "./topics.ts";

/** Bytes a stream may have waiting for its reader before it is reset and closed. */
export const STREAM_BUFFER_BYTES = 4 * 1024 * 1024;
export const PING_MS = 25_000;
/**
 * Events are fanned out in batches at most this long after their commit: every stream then gets
 * one write per batch instead of one per event, which is what many subscribers cost. With 1,000
 * streams at 200 writes/s, 20 ms against 10 ms halved what the fan-out takes from concurrent creates
 * (the socket writes on both sides), and kept delivery p99 under 50 ms.
 */
export const FANOUT_DELAY_MS = 20;
/** How often the identities of open streams are re-checked (a revoked session ends its stream within 1 s). */
export const IDENTITY_CHECK_MS = 300;

interface Client {
  id: string;
  ip: string;
  identity: Identity;
  topics: Topic[];
  sink: SseSink;
  /** Replay from this event number when the first subscriptions arrive; null once done. */
  resumeFrom: number | null;
  /** Number of the last event sent, so a replay and the live flow never send one twice. */
  lastSeq: number;
}

export interface OpenOptions {
  identity: Identity;
  ip: string;
  lastEventId: string | null;
  /** Topics of `?subscribe=`, or null. */
  subscribe: string[] | null;
  /** Called when the stream starts to end: the connection should time out if its reader takes nothing more. */
  onEnd?: () => void;
}

export type SubscribeResult = { ok: true; subscriptions: unknown[] };

/** The per-address stream and topic counts of every node sharing the database (shared-limits.ts). */
export interface SharedLimits {
  /** Records a new stream of `ip` with `topics` topics, unless that passes a limit: then which one. */
  admit(id: string, ip: string, topics: number, maxStreams: number, maxTopics: number): Promise<"streams" | "topics" | null>;
  /** Sets a stream's topic count, unless that passes the limit. */
  retopic(id: string, ip: string, topics: number, maxTopics: number): Promise<"topics" | null>;
  /** Forgets a stream that ended. */
  release(id: string): void;
}
export type ForwardSubscribe = (clientId: string, topics: unknown, identity: Identity) => Promise<SubscribeResult>;

export interface RealtimeHub {
  /** Opens a stream: `reset` first when a resume cannot be served, then `connect`. Limits → 429. */
  open(opts: OpenOptions): Promise<Response>;
  /** POST /realtime: replaces a stream's topics and binds the caller's identity to it. */
  subscribe(clientId: unknown, topics: unknown, identity: Identity): Promise<SubscribeResult>;
  /** Ends every stream (graceful stop). */
  closeAll(): void;
  /**
   * Makes this hub one node of several (relay.ts): new client ids start with `tag` and a dot, and a
   * subscribe call naming another node's stream is handed to `forward`, which asks that node.
   */
  attachNode(tag: string, forward: ForwardSubscribe, limits: SharedLimits): void;
  /** Takes a committed change made elsewhere (another node, see relay.ts) as if committed here. */
  accept(event: ChangeEvent): void;
  /**
   * Changes may have been missed (the notices of other nodes were lost): every stream gets `reset`
   * and ends, and no Last-Event-ID from before now can be resumed.
   */
  resetAll(reason: string): void;
  /** Open streams, for tests and the bench. */
  readonly size: number;
  /** Events held for resumes, for tests. */
  readonly held: number;
}

const hubs = new WeakMap<AppContext, RealtimeHub>();

/** The context's realtime hub, made at first use. */
export function realtimeHub(ctx: AppContext): RealtimeHub {
  let hub = hubs.get(ctx);
  if (!hub) hubs.set(ctx, (hub = createHub(ctx)));
  return hub;
}

/** Ends every realtime stream of the context, if it has any. */
export function closeRealtime(ctx: AppContext): void {
  hubs.get(ctx)?.closeAll();
}

const PING = new TextEncoder().encode(": ping\n\n");

const STREAMS_OVER = "too many realtime streams from this address";
const TOPICS_OVER = "too many realtime topics from this address";
const tooMany = (message: string) => new AppError(429, "rate_limited", message, {}, { "retry-after": "5" });

function createHub(ctx: AppContext): RealtimeHub {
  const clients = new Map<string, Client>();
  // Collection name → the clients with a topic on it, so an event of a collection nobody follows costs nothing.
  const followers = new Map<string, Set<Client>>();
  const buffer = new ReplayBuffer();
  // Event ids carry the process's epoch: an id from before a restart cannot be mistaken for a current one.
  const epoch = `${ctx.clock.now().toString(36)}${randomToken(3)}`;
  const eventId = (seq: number) => `${epoch}-${seq}`;
  let pending: HeldEvent[] = [];
  let scheduled = false;
  // Deliveries (live and replays) run one after another, so a client receives events in order.
  let delivering: Promise<void> = Promise.resolve();
  const inOrder = (work: () => Promise<void>): Promise<void> => (delivering = delivering.then(work));
  let timers: ReturnType<typeof setInterval>[] = [];
  let node: { tag: string; forward: ForwardSubscribe; limits: SharedLimits } | null = null;

  // Streams may not resume from an event number below this one (changes were missed after it).
  let replayFloor = 0;
  const canResume = (from: number) => from >= replayFloor && buffer.holdsAfter(from);

  // Events are held for resumes from the first stream on. Before it no client holds an event id of
  // this process (ids carry its epoch), so none could be resumed: a process nobody follows (a bulk
  // load) does not keep its last 20,000 records in memory for five minutes.
  let opened = false;

  ctx.events.subscribe(accept);

  function accept(event: ChangeEvent) {
    if (!opened) return buffer.skip();
    pending.push(buffer.push(event, ctx.clock.now()));
    // IMPORTANT: the writer only queues; rule checks and fan-out run after its request, so no
    // number of subscribers (or a stalled one) slows a write.
    if (!scheduled && clients.size) {
      scheduled = true;
      setTimeout(() => void flush(), FANOUT_DELAY_MS);
    }
    if (!clients.size) pending = [];
  }

  /** Queues the pending events for delivery, after those already queued; settles when they are sent. */
  function flush(): Promise<void> {
    scheduled = false;
    const events = pending;
    pending = [];
    return inOrder(async () => {
      for (const held of events) {
        const targets = followers.get(held.event.collection);
        if (!targets) continue;
        try {
          await deliver(held, targets);
        } catch (err) {
          // A failure here (the database gone at shutdown) must not take the process down with it.
          ctx.log.error("realtime delivery failed", { collection: held.event.collection, error: String(err) });
        }
      }
    });
  }

  /** Sends one event to every listed client it concerns and may be read by. */
  async function deliver(held: HeldEvent, targets: Iterable<Client>) {
    const e = held.event;
    // The collection as it is now (its read rule decides who gets the event): checked against the database at
    // most once per event-loop turn, so the events delivered together share one check, and a rule another
    // node or the CLI changed holds for the next event.
    const col = await findCollection(ctx, e.collection);
    if (!col) return;
    const hard = e.action === "hard_delete";
    const action = hard ? "delete" : e.action;
    // Events carry the admin's view; only a `many` field (readable targets only) differs per reader.
    const withRelations = !hard && (await relationsFrom(ctx, col.name)).some((r) => r.type === "many");
    const frames = new Map<string, Uint8Array>();
    for (const c of targets) {
      if (held.seq <= c.lastSeq || !c.topics.length) continue;
      const wanted = concerns(c, col, e);
      if (!(wanted instanceof Promise ? await wanted : wanted)) continue;
      c.lastSeq = held.seq;
      // Relation fields (`many` lists only readable targets) depend on the reader, roles included
      // (read from each stream's token, so one user's streams may differ); plain records do not.
      const p = c.identity.principal;
      const key = withRelations ? `${c.identity.key}\u0000${p.kind === "user" ? p.roles.join(",") : ""}` : "";
      let frame = frames.get(key);
      if (frame === undefined) {
        const record = hard ? { _id: e.record._id } : await recordAsRead(col, e.record, withRelations ? c : null);
        frame = sseFrame(action, JSON.stringify({ collection: col.name, action, record }), eventId(held.seq));
        frames.set(key, frame);
      }
      if (!c.sink.send(frame)) drop(c);
    }
  }

  async function recordAsRead(col: Collection, record: RecordJson, reader: Client | null): Promise<RecordJson> {
    if (!reader) return record;
    const copy = { ...record };
    await attachRelationFields(ctx, col, [copy], reader.identity.principal);
    return copy;
  }

  /**
   * A topic names the record, and the subscriber may read it (rule checked now, on the record in memory).
   * Answers without a promise unless a filter topic has to be matched: this runs per stream per event.
   */
  function concerns(c: Client, col: Collection, e: ChangeEvent): boolean | Promise<boolean> {
    let filtered = false;
    for (const t of c.topics) {
      if (t.collection !== col.name || (t.id !== null && t.id !== e.record._id)) continue;
      if (!t.matcher) return canRead(col, c.identity.principal, e.record);
      filtered = true;
    }
    return filtered && matchesFilter(c, col, e);
  }

  async function matchesFilter(c: Client, col: Collection, e: ChangeEvent): Promise<boolean> {
    const p = c.identity.principal;
    const id = e.record._id;
    let named = false;
    for (const t of c.topics) {
      if (t.collection !== col.name || (t.id !== null && t.id !== id)) continue;
      if (!t.matcher || (await t.matcher(ctx, col, e.record, p))) {
        named = true;
        break;
      }
    }
    return named && canRead(col, p, e.record);
  }

  function drop(c: Client) {
    forget(c);
    c.sink.end();
  }

  /** Removes a client from the registry and the follower index. */
  function forget(c: Client) {
    if (clients.get(c.id) === c) {
      clients.delete(c.id);
      node?.limits.release(c.id);
    }
    index(c, []);
    if (!clients.size) stopTimers();
  }

  /** Sets a client's topics and keeps the follower index in step. */
  function index(c: Client, topics: Topic[]) {
    for (const t of c.topics) {
      const set = followers.get(t.collection);
      set?.delete(c);
      if (set && !set.size) followers.delete(t.collection);
    }
    c.topics = topics;
    for (const t of topics) (followers.get(t.collection) ?? followers.set(t.collection, new Set()).get(t.collection)!).add(c);
  }

  function startTimers() {
    if (timers.length) return;
    const ping = setInterval(() => {
      for (const c of clients.values()) if (!c.sink.send(PING)) drop(c);
    }, PING_MS);
    const check = setInterval(checkIdentities, IDENTITY_CHECK_MS);
    timers = [ping, check];
    for (const t of timers) t.unref?.();
  }

  function stopTimers() {
    for (const t of timers) clearInterval(t);
    timers = [];
  }

  async function checkIdentities() {
    const bound = [...clients.values()].filter((c) => c.identity.principal.kind !== "anonymous");
    if (!bound.length) return;
    let ended: Set<Identity>;
    try {
      ended = await endedIdentities(ctx, bound.map((c) => c.identity));
    } catch (err) {
      ctx.log.warn("realtime identity check failed", { error: String(err) });
      return;
    }
    for (const c of bound) if (ended.has(c.identity)) drop(c);
  }

  function ipUsage(ip: string) {
    let streams = 0;
    let topics = 0;
    for (const c of clients.values())
      if (c.ip === ip) {
        streams++;
        topics += c.topics.length;
      }
    return { streams, topics };
  }

  /** Sets a client's topics; on the first subscription, replays what it missed since connecting (or its Last-Event-ID). */
  async function setTopics(c: Client, topics: Topic[]) {
    index(c, topics);
    if (c.resumeFrom === null || !topics.length) return;
    const from = c.resumeFrom;
    c.resumeFrom = null;
    if (!canResume(from)) {
      c.sink.send(sseFrame("reset", JSON.stringify({ reason: "too_old" }), eventId(buffer.lastSeq)));
      c.lastSeq = buffer.lastSeq;
      return;
    }
    await inOrder(async () => {
      for (const held of buffer.after(Math.max(from, c.lastSeq))) await deliver(held, [c]);
    });
  }

  function parseLastEventId(raw: string | null): number | null {
    if (!raw) return null;
    const m = /^([0-9a-z_-]+)-(\d{1,15})$/i.exec(raw.trim());
    if (!m || m[1] !== epoch) return -1;
    return Number(m[2]);
  }

  return {
    get size() {
      return clients.size;
    },

    get held() {
      return buffer.size;
    },

    async open({ identity, ip, lastEventId, subscribe, onEnd }) {
      opened = true;
      const usage = ipUsage(ip);
      const maxStreams = await getSetting(ctx, "realtime_max_streams_per_ip");
      // With several nodes the counts are every node's, taken below with the stream's row.
      if (!node && usage.streams >= maxStreams) throw tooMany(STREAMS_OVER);
      const topics = subscribe ? (node ? subscribe : await checkTopicCount(subscribe, usage.topics)) : [];
      const parsed = subscribe ? await parseTopics(ctx, topics, identity.principal) : [];
      const id = node ? `${node.tag}.${randomToken(24)}` : randomToken(24);
      if (node) {
        const over = await node.limits.admit(id, ip, parsed.length, maxStreams, await getSetting(ctx, "realtime_max_topics_per_ip"));
        if (over) throw tooMany(over === "streams" ? STREAMS_OVER : TOPICS_OVER);
      }
      const sink = new SseSink(STREAM_BUFFER_BYTES, () => forget(c), onEnd, () => eventId(buffer.lastSeq));
      const resume = parseLastEventId(lastEventId);
      const c: Client = { id, ip, identity, topics: [], sink, resumeFrom: buffer.lastSeq, lastSeq: buffer.lastSeq };
      if (resume !== null) {
        if (canResume(resume)) c.resumeFrom = c.lastSeq = resume;
        else sink.send(sseFrame("reset", JSON.stringify({ reason: "too_old" }), eventId(buffer.lastSeq)));
      }
      sink.send(sseFrame("connect", JSON.stringify({ client_id: id }), eventId(Math.max(c.lastSeq, c.resumeFrom ?? 0))));
      clients.set(id, c);
      startTimers();
      if (parsed.length) await setTopics(c, parsed);
      return sink.response;
    },

    async subscribe(clientId, raw, identity) {
      if (typeof clientId !== "string") throw badRequest("client_id is required: the id the stream's connect event gave");
      const c = clients.get(clientId);
      if (!c) {
        // A stream of another node sharing the database: that node answers.
        const owner = node ? clientId.slice(0, Math.max(0, clientId.indexOf("."))) : "";
        if (node && owner && owner !== node.tag) return await node.forward(clientId, raw, identity);
        throw notFound("unknown client_id: open GET /api/v1/realtime first");
      }
      // SECURITY: a stream serves one caller; another identity may not read it (or change what it receives).
      if (c.identity.principal.kind !== "anonymous" && c.identity.key !== identity.key)
        throw forbidden("this client_id is bound to another identity");
      const list = node ? (raw as unknown[]) : await checkTopicCount(raw, ipUsage(c.ip).topics - c.topics.length);
      const topics = await parseTopics(ctx, list, identity.principal);
      if (node && await node.limits.retopic(c.id, c.ip, topics.length, await getSetting(ctx, "realtime_max_topics_per_ip")))
        throw tooMany(TOPICS_OVER);
      // Changes committed before this call go out under the topics (and identity) they were
      // committed under: a paused stream does not get them later, a dropped topic not at all.
      await flush();
      c.identity = identity;
      await setTopics(c, topics);
      return { ok: true, subscriptions: topics.map((t) => t.source) };
    },

    closeAll() {
      stopTimers();
      for (const c of [...clients.values()]) drop(c);
    },

    accept,

    attachNode(tag, forward, limits) {
      node = { tag, forward, limits };
    },

    resetAll(reason) {
      replayFloor = buffer.lastSeq;
      const frame = sseFrame("reset", JSON.stringify({ reason }), eventId(buffer.lastSeq));
      for (const c of [...clients.values()]) {
        forget(c);
        c.sink.end(frame);
      }
    },
  };

  async function checkTopicCount(raw: unknown, usedByIp: number): Promise<unknown[]> {
    if (!Array.isArray(raw)) return raw as unknown[];
    if (usedByIp + raw.length > await getSetting(ctx, "realtime_max_topics_per_ip"))
      throw tooMany(TOPICS_OVER);
    return raw;
  }
}
