import type { AppContext } from "../context.ts";
import { lastKnownHandle } from "../catalog/catalog.ts";
import { randomToken } from "../crypto.ts";
import { AppError, badRequest, forbidden, notFound } from "../errors.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { getSetting } from "../settings/settings.ts";
import { usersAccessVersion } from "../tables/users.ts";
import { deliverEvent, newAccessCache, readersOf, type AccessCache, type Delivery, type FanOut } from "./fan-out.ts";
import { endedIdentities, type Identity } from "./identity.ts";
import type { EventIds } from "./event-ids.ts";
import { heldEvent, type HeldEvent } from "./replay.ts";
import { canResume, createResumeState, idAt, idOf, prepareIds, replayable, resumePoint, type ResumeState } from "./resume.ts";
import { SseSink, sseFrame } from "./sse.ts";
import { addStream, addressUsage, claim, claimTopics, createRegistry, removeStream, setStreamTopics, type Stream, type StreamRegistry } from "./streams.ts";
import { checkTopicCount, parseTopics, type Topic } from "./topics.ts";

/** Bytes a stream may have waiting for its reader before it is reset and closed. */
export const STREAM_BUFFER_BYTES = 4 * 1024 * 1024;
export const PING_MS = 25_000;
/**
 * Events are fanned out in batches at most this long after their commit: the events committed meanwhile go out
 * together, every stream getting one write for all of them.
 */
export const FANOUT_DELAY_MS = 5;
/**
 * The batch length while streams get events densely (on average one in every 2 × this or more often, measured over
 * the last second): then most streams have several events in a batch, and one write instead of one per event is
 * what many subscribers cost. With 1,000 streams at 50 events a second, 20 ms against 5 ms took 30% less of the
 * server's CPU per delivery; at 20 events a second per stream (rooms), a batch rarely holds two events for one
 * stream, and 5 ms took delivery p99 from 71 to 38 ms.
 */
export const FANOUT_DENSE_DELAY_MS = 20;
/** How long the rate of deliveries per stream is measured before the batch length follows it. */
const RATE_WINDOW_MS = 1000;
/** How often the identities of open streams are re-checked (a revoked session ends its stream within 1 s). */
export const IDENTITY_CHECK_MS = 300;

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
  /** Whether a live node holds a stream of this id (its row, marked alive lately). */
  known(id: string): Promise<boolean>;
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
   * From now on this hub takes its events numbered by the database (relay.ts), not from this process's event
   * bus: its ids are those of `ids`, shared by every node, and it holds events from now on.
   */
  order(ids: EventIds): OrderedFeed;
  /** Open streams, for tests and the bench. */
  readonly size: number;
  /** Events held for resumes, for tests. */
  readonly held: number;
  /** Topic changes waiting for this process's own earlier events to come back (OwnEvents), for tests. */
  readonly waiting: number;
}

/**
 * Events numbered by the database, in the order every node receives them (relay.ts), each number following the
 * one before without a hole: so a hole, or a lost connection, tells exactly when a resume could miss something.
 */
export interface OrderedFeed {
  /** Event number `seq` (null: one that cannot be delivered, a record already gone; the number still counts). */
  accept(event: ChangeEvent | null, seq: number): void;
  /** An event without a number (a node of an earlier version sent it): delivered live, never held. */
  acceptUnnumbered(event: ChangeEvent): void;
  /** The events of other processes are being missed from now on: every stream gets `reset` and ends. */
  lost(reason: string): void;
  /** Events of this process were never numbered nor sent: every stream gets `reset` and ends. */
  reset(reason: string): void;
  /**
   * Listening (again), with the sequence at `n`: every event numbered after `n` will come. When events were
   * numbered since the last one received, they were missed: streams opened meanwhile get `reset` (`reconnected`),
   * and no resume reaches back before `n`.
   */
  listening(n: number): void;
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

/**
 * A hub: the streams (streams.ts), the events on their way to them (fan-out.ts), and what a resume
 * needs (resume.ts, replay.ts).
 */
interface Hub {
  ctx: AppContext;
  reg: StreamRegistry;
  resume: ResumeState;
  /** Events committed and not yet fanned out, with their records as committed. */
  pending: Delivery[];
  /** Whether a fan-out of `pending` is due. */
  scheduled: boolean;
  /** Deliveries (live and replays) run one after another, so a stream receives events in order. */
  delivering: Promise<void>;
  timers: ReturnType<typeof setInterval>[];
  node: { tag: string; forward: ForwardSubscribe; limits: SharedLimits } | null;
  /** Events come numbered by the database (OrderedFeed), not from the event bus; `listened`: it listened once. */
  ordered: { listened: boolean } | null;
  own: OwnEvents;
  /** The users' access read for earlier deliveries, kept while no user's access changes (see readersOf). */
  access: AccessCache;
  /** The fan-out state of live batches while it holds (see liveFanOut); `version` null when it has no user's stream. */
  live: { version: string | null; changes: number; fan: FanOut } | null;
  /** Live deliveries since `since`, and whether streams got events densely in the last window (the batch length). */
  rate: { sent: number; since: number; dense: boolean };
}

/**
 * This process's own events while they come numbered by the database: they reach the feed one round trip after
 * their commit (their notice comes back), so a stream opened, or a topic set, after a write was answered could
 * otherwise get that write as new. Each is counted at its commit: a stream remembers the count when it opens and
 * skips those at or below it (Stream.ownAfter); a topic change waits for those committed before it to arrive.
 */
interface OwnEvents {
  /** Own events committed so far. */
  committed: number;
  /** The count of the last own event that reached the feed (they arrive in commit order). */
  arrived: number;
  /** Each own event's count, by the event object the relay hands back. */
  count: WeakMap<ChangeEvent, number>;
  /** Topic changes waiting for the own events committed before them. */
  waiters: { n: number; done: () => void }[];
}

/** How long a topic change waits at most for this process's own events to come back (a notice lost on the way). */
const OWN_WAIT_MS = 5_000;

function createHub(ctx: AppContext): RealtimeHub {
  const h: Hub = {
    ctx,
    reg: createRegistry(),
    resume: createResumeState(),
    pending: [],
    scheduled: false,
    delivering: Promise.resolve(),
    timers: [],
    node: null,
    ordered: null,
    own: { committed: 0, arrived: 0, count: new WeakMap(), waiters: [] },
    access: newAccessCache(),
    live: null,
    rate: { sent: 0, since: 0, dense: false },
  };
  ctx.events.subscribe((event) => {
    if (!h.ordered) accept(h, event);
    else h.own.count.set(event, ++h.own.committed);
  });
  return {
    get size() {
      return h.reg.streams.size;
    },
    get held() {
      return h.resume.buffer.size;
    },
    get waiting() {
      return h.own.waiters.length;
    },
    open: (opts) => openStream(h, opts),
    subscribe: (clientId, raw, identity) => subscribeStream(h, clientId, raw, identity),
    closeAll() {
      stopTimers(h);
      for (const s of [...h.reg.streams.values()]) dropStream(h, s);
    },
    accept: (event) => accept(h, event),
    attachNode(tag, forward, limits) {
      h.node = { tag, forward, limits };
    },
    order: (ids) => orderedFeed(h, ids),
  };
}

function orderedFeed(h: Hub, ids: EventIds): OrderedFeed {
  const r = h.resume;
  h.ordered = { listened: false };
  r.ids = ids;
  // Any node may be asked to resume a stream of another: every node holds from the start.
  r.holding = true;
  r.gap = true;
  return {
    accept(event, seq) {
      const b = r.buffer;
      const own = event ? h.own.count.get(event) : undefined;
      if (seq <= b.lastSeq) {
        // Numbered before this node knew where the sequence stood (just after it listened): sent, not held.
        if (event) queueLive(h, ownHeld(heldEvent(event, h.ctx.clock.now(), generationOf(h, event), seq), own), event);
      } else {
        // A number skipped: whatever it was, it was missed here, and no resume may reach back over it.
        if (seq !== b.lastSeq + 1) r.floor = Math.max(r.floor, seq - 1);
        if (!event) return b.skip(seq);
        queueLive(h, ownHeld(b.push(event, h.ctx.clock.now(), generationOf(h, event), seq), own), event);
      }
      if (own !== undefined) ownArrived(h, own);
    },
    acceptUnnumbered(event) {
      const held = heldEvent(event, h.ctx.clock.now(), generationOf(h, event), r.buffer.lastSeq);
      held.unnumbered = true;
      queueLive(h, held, event);
    },
    lost(reason) {
      r.gap = true;
      endAll(h, reason);
      ownArrived(h, h.own.committed);
    },
    reset(reason) {
      endAll(h, reason);
      ownArrived(h, h.own.committed);
    },
    listening(n) {
      const b = r.buffer;
      const first = !h.ordered!.listened;
      h.ordered!.listened = true;
      r.gap = false;
      if (!first && n === b.lastSeq) return;
      r.floor = Math.max(r.floor, n);
      if (n > b.lastSeq) b.skip(n);
      if (!first) endAll(h, "reconnected");
    },
  };
}

/** Marks a held event as this process's own, counted `own` at its commit. */
function ownHeld(held: HeldEvent, own: number | undefined): HeldEvent {
  if (own !== undefined) held.own = own;
  return held;
}

/** Own events up to count `n` have reached the feed (or never will: the streams were reset): their waiters go on. */
function ownArrived(h: Hub, n: number): void {
  const o = h.own;
  if (n > o.arrived) o.arrived = n;
  if (!o.waiters.length) return;
  o.waiters = o.waiters.filter((w) => (w.n <= o.arrived ? (w.done(), false) : true));
}

/** Settles once this process's own events up to count `n` have reached the feed (at most OWN_WAIT_MS). */
function ownEventsIn(h: Hub, n: number): Promise<void> {
  if (n <= h.own.arrived) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      h.own.waiters = h.own.waiters.filter((w) => w.done !== done);
      h.ctx.log.warn("realtime: this node's own changes did not come back in time; topics set without them");
      resolve();
    }, OWN_WAIT_MS);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    h.own.waiters.push({ n, done });
  });
}

const generationOf = (h: Hub, event: ChangeEvent) => lastKnownHandle(h.ctx, event.collection)?.col.createdAt ?? null;

/** Takes a committed change: holds it for resumes and queues it for the streams. */
function accept(h: Hub, event: ChangeEvent): void {
  const r = h.resume;
  if (!r.holding) return r.buffer.skip();
  queueLive(h, r.buffer.push(event, h.ctx.clock.now(), generationOf(h, event)), event);
}

/** Queues an event, numbered as `held`, for the streams following its collection, with its record as committed. */
function queueLive(h: Hub, held: HeldEvent, event: ChangeEvent): void {
  if (!h.reg.streams.size) return;
  h.pending.push({ held, event, stub: false });
  // IMPORTANT: the writer only queues; rule checks and fan-out run after its request, so no
  // number of subscribers (or a stalled one) slows a write.
  if (!h.scheduled) {
    h.scheduled = true;
    setTimeout(() => void flush(h), h.rate.dense ? FANOUT_DENSE_DELAY_MS : FANOUT_DELAY_MS);
  }
}

/** Runs `work` after the deliveries already queued; a failed one does not stop those after it. */
function inOrder(h: Hub, work: () => Promise<void>): Promise<void> {
  const run = h.delivering.then(work);
  h.delivering = run.catch(() => {});
  return run;
}

/** Queues the pending events for delivery, after those already queued; settles when they are sent. */
function flush(h: Hub): Promise<void> {
  h.scheduled = false;
  const batch = h.pending;
  h.pending = [];
  return inOrder(h, () => deliverBatch(h, batch));
}

/** The shared state of a fan-out to `streams`: who each of their users reads as now (see readersOf). */
async function fanOutTo(h: Hub, streams: Iterable<Stream>, version?: string): Promise<FanOut> {
  // Room for every stream's user, and for as many again whose streams closed.
  h.access.limit = 2 * h.reg.streams.size + 1000;
  return {
    readers: await readersOf(h.ctx, streams, h.access, version),
    idOf: (held) => idOf(h.resume, held),
    drop: (s) => dropStream(h, s),
    changes: () => h.reg.changes,
    sent: 0,
  };
}

/**
 * The fan-out state of live batches, made for every user's stream and kept from batch to batch while no user's
 * access changed (one small query tells, see usersAccessVersion) and no stream's topics changed: a batch then
 * costs no pass over the streams that its events do not reach.
 */
async function liveFanOut(h: Hub): Promise<FanOut> {
  // IMPORTANT: both counts before the readers they vouch for are read.
  const changes = h.reg.changes;
  const live = h.live;
  // No user's stream when it was made and no stream's topics set since: no user's access to look at (no query).
  if (live && live.changes === changes && live.version === null) return live.fan;
  const version = await usersAccessVersion(h.ctx.db);
  if (live && live.version === version && live.changes === changes) return live.fan;
  const users: Stream[] = [];
  for (const s of h.reg.streams.values()) if (s.identity.principal.kind === "user") users.push(s);
  const fan = await fanOutTo(h, users, version);
  h.live = { version: users.length ? version : null, changes, fan };
  return fan;
}

/** Sends a batch of live events to the streams following their collections. */
async function deliverBatch(h: Hub, batch: Delivery[]): Promise<void> {
  if (!batch.some((d) => h.reg.followers.has(d.event.collection))) return;
  let fan: FanOut;
  try {
    fan = await liveFanOut(h);
  } catch (err) {
    // The database gone (at shutdown): the events cannot be checked against the roles of now.
    h.ctx.log.error("realtime delivery failed", { error: String(err) });
    return;
  }
  const sentBefore = fan.sent;
  for (const d of batch) {
    const targets = h.reg.followers.get(d.event.collection);
    if (!targets) continue;
    try {
      await deliverEvent(h.ctx, d, targets, fan);
    } catch (err) {
      // A failure here (the database gone at shutdown) must not take the process down with it.
      h.ctx.log.error("realtime delivery failed", { collection: d.event.collection, error: String(err) });
    }
  }
  measureRate(h, fan.sent - sentBefore);
}

/** Counts a batch's deliveries; once a window is over, the batch length follows how densely streams got events in it. */
function measureRate(h: Hub, sent: number): void {
  const r = h.rate;
  const now = performance.now();
  r.sent += sent;
  if (now - r.since < RATE_WINDOW_MS) return;
  const perStream = r.sent / Math.max(1, h.reg.streams.size) / ((now - r.since) / 1000);
  r.dense = perStream * ((2 * FANOUT_DENSE_DELAY_MS) / 1000) >= 1;
  r.sent = 0;
  r.since = now;
}

/** Sends a stream what it missed after event `from`: the held events still replayable, checked as live ones. */
function replayTo(h: Hub, s: Stream, from: number): Promise<void> {
  return inOrder(h, async () => {
    const events = await replayable(h.ctx, h.resume.buffer.after(Math.max(from, s.lastSeq)));
    if (!events.length) return;
    const fan = await fanOutTo(h, [s]);
    for (const held of events) await deliverEvent(h.ctx, { held, event: held.event, stub: held.ref }, [s], fan);
  });
}

function dropStream(h: Hub, s: Stream): void {
  forgetStream(h, s);
  s.sink.end();
}

/** Removes a stream from the registry (and the limits shared with other nodes). */
function forgetStream(h: Hub, s: Stream): void {
  if (removeStream(h.reg, s)) h.node?.limits.release(s.id);
  if (!h.reg.streams.size) stopTimers(h);
}

function startTimers(h: Hub): void {
  if (h.timers.length) return;
  const ping = setInterval(() => {
    for (const s of h.reg.streams.values()) if (!s.sink.send(PING)) dropStream(h, s);
  }, PING_MS);
  const check = setInterval(() => void checkIdentities(h), IDENTITY_CHECK_MS);
  h.timers = [ping, check];
  for (const t of h.timers) t.unref?.();
}

function stopTimers(h: Hub): void {
  for (const t of h.timers) clearInterval(t);
  h.timers = [];
}

/** Ends the streams whose identity ended (a revoked session, a deleted user, an expired token…). */
async function checkIdentities(h: Hub): Promise<void> {
  const bound = [...h.reg.streams.values()].filter((s) => s.identity.principal.kind !== "anonymous");
  if (!bound.length) return;
  let ended: Set<Identity>;
  try {
    ended = await endedIdentities(h.ctx, bound.map((s) => s.identity));
  } catch (err) {
    h.ctx.log.warn("realtime identity check failed", { error: String(err) });
    return;
  }
  for (const s of bound) if (ended.has(s.identity)) dropStream(h, s);
}

/**
 * Sets a stream's topics; on the first subscription of a stream opened with a Last-Event-ID, replays what followed
 * that event. A new stream gets the changes committed after its topics are set, not those since it connected.
 */
async function setTopics(h: Hub, s: Stream, topics: Topic[]): Promise<void> {
  setStreamTopics(h.reg, s, topics);
  if (s.resumeFrom === null || !topics.length) return;
  const from = s.resumeFrom;
  s.resumeFrom = null;
  const r = h.resume;
  if (!canResume(r, from)) {
    s.sink.send(sseFrame("reset", JSON.stringify({ reason: "too_old" }), idAt(r, r.buffer.lastSeq)));
    s.lastSeq = r.buffer.lastSeq;
    return;
  }
  await replayTo(h, s, from);
}

async function openStream(h: Hub, { identity, ip, lastEventId, subscribe, onEnd }: OpenOptions): Promise<Response> {
  const { ctx, node } = h;
  const r = h.resume;
  await prepareIds(ctx, r);
  r.holding = true;
  checkTopicCount(subscribe);
  const maxStreams = await getSetting(ctx, "realtime_max_streams_per_ip");
  const maxTopics = subscribe && !node ? await getSetting(ctx, "realtime_max_topics_per_ip") : 0;
  const wanted = subscribe?.length ?? 0;
  // SECURITY: checked and counted with no await between (see claim): streams opened at once from one address
  // are counted one after the other. With several nodes the counts are every node's, taken below with the stream's row.
  if (!node) {
    const usage = addressUsage(h.reg, ip);
    if (usage.streams >= maxStreams) throw tooMany(STREAMS_OVER);
    if (usage.topics + wanted > maxTopics && subscribe) throw tooMany(TOPICS_OVER);
  }
  claim(h.reg, ip, 1, wanted);
  let s: Stream | null = null;
  try {
    const parsed = subscribe ? await parseTopics(ctx, subscribe, identity.principal) : [];
    const id = node ? `${node.tag}.${randomToken(24)}` : randomToken(24);
    if (node) {
      const over = await node.limits.admit(id, ip, parsed.length, maxStreams, await getSetting(ctx, "realtime_max_topics_per_ip"));
      if (over) throw tooMany(over === "streams" ? STREAMS_OVER : TOPICS_OVER);
    }
    const last = r.buffer.lastSeq;
    const sink = new SseSink(STREAM_BUFFER_BYTES, () => forgetStream(h, stream), onEnd, () => idAt(r, r.buffer.lastSeq));
    // Own events committed before now are not this stream's, even those whose notice is still on its way.
    const stream: Stream = {
      id, ip, identity, topics: [], byCollection: new Map(), sink, resumeFrom: null, lastSeq: last, ownAfter: h.own.committed,
      claimed: wanted, subscribing: 0,
    };
    const resume = resumePoint(r, lastEventId);
    if (resume !== null) {
      // A resume gets what followed its event, own events still on their way included.
      if (canResume(r, resume)) (stream.resumeFrom = stream.lastSeq = resume), (stream.ownAfter = 0);
      else sink.send(sseFrame("reset", JSON.stringify({ reason: "too_old" }), idAt(r, last)));
    }
    sink.send(sseFrame("connect", JSON.stringify({ client_id: id }), idAt(r, Math.max(stream.lastSeq, stream.resumeFrom ?? 0))));
    addStream(h.reg, (s = stream));
    startTimers(h);
    if (parsed.length) await setTopics(h, s, parsed);
    return sink.response;
  } catch (err) {
    // Refused (bad topics, another node's count) or failed: the stream's counts are given back.
    if (s) dropStream(h, s);
    else claim(h.reg, ip, -1, -wanted);
    throw err;
  }
}

async function subscribeStream(h: Hub, clientId: unknown, raw: unknown, identity: Identity): Promise<SubscribeResult> {
  const { ctx, node } = h;
  // The own events committed before this call, whose notices may still be on their way (see OwnEvents).
  const committed = h.own.committed;
  if (typeof clientId !== "string") throw badRequest("client_id is required: the id the stream's connect event gave");
  const s = h.reg.streams.get(clientId);
  if (!s) {
    // A stream of another node sharing the database: that node answers.
    const owner = node ? clientId.slice(0, Math.max(0, clientId.indexOf("."))) : "";
    // An id no live node holds is 404 at once, not after the forward's timeout.
    if (node && owner && owner !== node.tag && (await node.limits.known(clientId))) return await node.forward(clientId, raw, identity);
    throw notFound("unknown client_id: open GET /api/v1/realtime first");
  }
  // SECURITY: a stream serves one caller; another identity may not read it (or change what it receives).
  if (s.identity.principal.kind !== "anonymous" && s.identity.key !== identity.key) throw forbidden("this client_id is bound to another identity");
  checkTopicCount(raw);
  const maxTopics = await getSetting(ctx, "realtime_max_topics_per_ip");
  const asked = Array.isArray(raw) ? raw.length : 0;
  // SECURITY: checked and counted with no await between (see claim). While calls on the stream are under way it
  // counts the most any of them asked; once they are over, the topics it has.
  if (!node && Array.isArray(raw) && addressUsage(h.reg, s.ip).topics - s.claimed + asked > maxTopics) throw tooMany(TOPICS_OVER);
  if (asked > s.claimed) claimTopics(h.reg, s, asked);
  s.subscribing++;
  try {
    const topics = await parseTopics(ctx, raw, identity.principal);
    if (node && (await node.limits.retopic(s.id, s.ip, topics.length, maxTopics))) throw tooMany(TOPICS_OVER);
    // Changes committed before this call go out under the topics (and identity) they were
    // committed under: a paused stream does not get them later, a dropped topic not at all.
    // Own events on their way come back first (those from before the stream opened are not its own anyway).
    if (committed > s.ownAfter) await ownEventsIn(h, committed);
    await flush(h);
    s.identity = identity;
    await setTopics(h, s, topics);
    return { ok: true, subscriptions: topics.map((t) => t.source) };
  } finally {
    if (--s.subscribing === 0) claimTopics(h.reg, s, s.topics.length);
  }
}

/** Every stream gets `reset` (with the id of the last event held) and ends. */
function endAll(h: Hub, reason: string): void {
  const r = h.resume;
  if (!h.reg.streams.size) return;
  const frame = sseFrame("reset", JSON.stringify({ reason }), idAt(r, r.buffer.lastSeq));
  for (const s of [...h.reg.streams.values()]) {
    forgetStream(h, s);
    s.sink.end(frame);
  }
}
