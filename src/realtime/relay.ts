import { jwtKey } from "../auth/keys.ts";
import { ADMIN } from "../principal.ts";
import { findHandle, recheckCatalog } from "../catalog/catalog.ts";
import type { AppContext } from "../context.ts";
import { randomToken } from "../crypto.ts";
import type { ChangeAction, ChangeEvent } from "../events/bus.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { AppError, badRequest, notFound } from "../errors.ts";
import { eventIds } from "./event-ids.ts";
import { realtimeHub, type RealtimeHub, type SubscribeResult } from "./hub.ts";
import { identityForNode, identityFromNode, type Identity, type WireIdentity } from "./identity.ts";
import { sharedLimits } from "./shared-limits.ts";

/**
 * Change events between nodes sharing one PostgreSQL database (CONTRACT §10, §11). Every process on
 * PostgreSQL (a server or a CLI command) sends the change events of its commits with NOTIFY, in the
 * order it committed them, the statement that sends them numbering them (`_realtime_sequence`, see
 * sendNotices). Every server listens and feeds every notice, its own included, into its realtime hub in the
 * order PostgreSQL delivers them, which is the same on every node and the order of their numbers: an event's
 * number is its place in that one order, so a stream can resume on any node from the id of the last event it
 * got on another (hub.ts, OrderedFeed). A process's own events are taken from memory when their notice comes
 * back, not read again.
 */

export const CHANGES_CHANNEL = "baas_changes";
/** NOTIFY takes at most 8000 bytes of payload; what is sent stays below, with room to spare. */
export const MAX_NOTICE_BYTES = 7900;
/** Notices sent by one statement. */
const NOTICES_PER_STATEMENT = 50;

/**
 * One change event as sent. A record that would not fit is stored in `_realtime_payloads` and named by
 * `p` (the receiver reads it there); `x` (read the record again) when it could not be stored.
 */
interface WireEvent {
  c: string;
  a: ChangeAction;
  i: string;
  t: number;
  b: string | null;
  r?: RecordJson;
  p?: string;
  x?: 1;
}

/** An event whose record does not fit a notice, as committed: stored, then sent naming its row (see stored). */
interface Oversized {
  base: WireEvent;
  record: string;
}

/** A committed change waiting to be sent: as sent (`wire`), and as committed (for this process's own hub). */
interface Outgoing {
  wire: string | Oversized;
  event: ChangeEvent;
}

/** A notice as packed (see pack): its number, its text up to the number of its first event, and its events. */
interface Packed {
  s: number;
  head: string;
  events: ChangeEvent[];
}

/** How long a stored record is kept for the other nodes to read (they read it as its notice arrives). */
const PAYLOAD_TTL_MS = 10 * 60_000;

/**
 * A notice: the sending process, its running number (which also keeps equal notices of one statement apart), its
 * events, and the number of its first event (`g`; the others follow on), written in by the statement that sends it.
 */
interface Notice {
  n: string;
  s: number;
  e: WireEvent[];
  g: number;
}

interface Relay {
  node: string;
  seq: number;
  /** Change events committed and not yet sent, oldest first, of any number of transactions. */
  waiting: Outgoing[];
  /** When stored records were last cleared out. */
  prunedAt: number;
  scheduled: boolean;
  /** Settles when everything queued so far has been sent (or given up on). */
  sending: Promise<void>;
  /** The sequence's row, read once it is known to exist (see ensureSequence). */
  sequence: Promise<Sequence> | null;
  /**
   * While this process listens: the events of its notices on their way, by notice number, handed to its hub
   * when the notice comes back (null when it does not listen: a CLI command).
   */
  echo: Map<number, ChangeEvent[]> | null;
  /** Told when events of this process could not be sent: its own streams would miss them. */
  onUnsent: (() => void) | null;
}

const relays = new WeakMap<AppContext, Relay>();

/** How long a node waits for the node holding a stream to answer a subscribe call. */
export const FORWARD_TIMEOUT_MS = 5_000;

/** A subscribe call for a stream held by node `to` (POST /realtime reached another node). */
interface Ask {
  q: string;
  to: string;
  from: string;
  c: string;
  s: unknown;
  i: WireIdentity;
}

/** The answer of the node holding the stream: the body, or the error. */
interface Answer {
  p: string;
  to: string;
  ok?: SubscribeResult;
  err?: { status: number; code: string; message: string; extra: Record<string, unknown>; headers: Record<string, string> };
}

const bytes = (s: string) => Buffer.byteLength(s, "utf8");
// The smallest notice that can carry an event: `{"n":…,"s":…,"e":[…],"g":…}` around it.
const envelope = (relay: Relay) => bytes(JSON.stringify({ n: relay.node, s: Number.MAX_SAFE_INTEGER, e: [], g: Number.MAX_SAFE_INTEGER }));

/**
 * The event as sent, or, for a record too large for a notice, what `stored` stores. A hard delete (its record
 * is `_id` and `_owner_id`, what read rules look at) that does not fit loses its longest values until it does.
 */
function wire(event: ChangeEvent, room: number): string | Oversized {
  const base: WireEvent = { c: event.collection, a: event.action, i: String(event.record._id), t: event.at, b: event.by };
  const whole = JSON.stringify({ ...base, r: event.record });
  if (bytes(whole) <= room) return whole;
  if (event.action !== "hard_delete") return { base, record: JSON.stringify(event.record) };
  const record: RecordJson = { ...event.record };
  const keep = new Set(["_id", "_owner_id"]);
  const bySize = Object.keys(record)
    .filter((k) => !keep.has(k))
    .sort((a, b) => bytes(JSON.stringify(record[b]) ?? "") - bytes(JSON.stringify(record[a]) ?? ""));
  for (const k of bySize) {
    delete record[k];
    const out = JSON.stringify({ ...base, r: record });
    if (bytes(out) <= room) return out;
  }
  return JSON.stringify({ ...base, r: { _id: event.record._id, _owner_id: event.record._owner_id ?? null } });
}

/** Room for the events of one notice. */
const eventRoom = (relay: Relay) => MAX_NOTICE_BYTES - envelope(relay);

/**
 * The notices carrying the events (each as `wire` wrote it), in order, each within MAX_NOTICE_BYTES once its
 * number is written in: the text of each up to `"g":`, which the sending statement completes.
 */
function pack(relay: Relay, wires: readonly string[], events: readonly ChangeEvent[]): Packed[] {
  const room = eventRoom(relay);
  const out: Packed[] = [];
  let parts: string[] = [];
  let held: ChangeEvent[] = [];
  let size = 0;
  const close = () => {
    if (!parts.length) return;
    const s = ++relay.seq;
    out.push({ s, head: `{"n":${JSON.stringify(relay.node)},"s":${s},"e":[${parts.join(",")}],"g":`, events: held });
    parts = [];
    held = [];
    size = 0;
  };
  for (let i = 0; i < wires.length; i++) {
    const w = wires[i]!;
    if (size + bytes(w) + 1 > room) close();
    parts.push(w);
    held.push(events[i]!);
    size += bytes(w) + 1;
  }
  close();
  return out;
}

/** The sequence's row: its epoch (7 bytes, in hex) and the number of the last event. */
interface Sequence {
  epoch: string;
  n: number;
}

/** Makes the sequence's row if it is not there yet (the first process on a database), and reads it. */
async function readSequence(ctx: AppContext): Promise<Sequence> {
  const epoch = Buffer.from(crypto.getRandomValues(new Uint8Array(7))).toString("hex");
  await ctx.db.run("INSERT INTO _realtime_sequence (id, epoch, n) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING", [1, epoch, 0]);
  const row = await ctx.db.get<{ epoch: string; n: number }>("SELECT epoch, n FROM _realtime_sequence WHERE id = ?", [1]);
  return { epoch: row!.epoch, n: Number(row!.n) };
}

/** The sequence's row exists: made once per process (again after a failure). */
function ensureSequence(ctx: AppContext, relay: Relay): Promise<Sequence> {
  relay.sequence ??= readSequence(ctx).catch((err) => {
    relay.sequence = null;
    throw err;
  });
  return relay.sequence;
}

/** How long a notice that could not be sent (the database unreachable) is tried again before its events are given up. */
const SEND_RETRY_MS = 10_000;

/**
 * Sends notices in one statement that also takes their numbers: the sequence's row moves forward by their
 * events and stays locked until the statement commits, and PostgreSQL delivers a committed statement's notices
 * after those of every statement committed before it, so the numbers follow the order every listener receives
 * them in. Each notice's text gets the number of its first event. False when no row was there to number them.
 */
async function sendNotices(ctx: AppContext, notices: readonly Packed[]): Promise<boolean> {
  const total = notices.reduce((n, p) => n + p.events.length, 0);
  const params: (string | number)[] = [total];
  const calls: string[] = [];
  let before = 0;
  for (const p of notices) {
    calls.push("pg_notify(?, CAST(? AS text) || CAST(g.n - CAST(? AS bigint) AS text) || '}')");
    params.push(CHANGES_CHANNEL, p.head, total - 1 - before);
    before += p.events.length;
  }
  const rows = await ctx.db.all(
    `WITH g AS (UPDATE _realtime_sequence SET n = n + CAST(? AS bigint) WHERE id = 1 RETURNING n) SELECT ${calls.join(", ")} FROM g`,
    params,
  );
  return rows.length > 0;
}

/**
 * Sends one statement's notices, trying again while the database cannot be reached (for at most SEND_RETRY_MS),
 * so a commit made as the database went away still reaches the other nodes once it is back. False when given up.
 */
async function sendWithRetry(ctx: AppContext, relay: Relay, notices: readonly Packed[]): Promise<boolean> {
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      await ensureSequence(ctx, relay);
      if (await sendNotices(ctx, notices)) return true;
      // The row is gone (a database emptied by hand): made again, then sent.
      relay.sequence = null;
      await ensureSequence(ctx, relay);
      if (await sendNotices(ctx, notices)) return true;
      throw new Error("the realtime sequence row is missing");
    } catch (err) {
      const transient = err instanceof AppError && err.status === 503;
      if (!transient || Date.now() - started > SEND_RETRY_MS) {
        ctx.log.warn("change events not relayed to other nodes", { events: notices.reduce((n, p) => n + p.events.length, 0), error: String(err) });
        return false;
      }
      await Bun.sleep(Math.min(1_000, 50 * 2 ** attempt));
    }
  }
}

/**
 * Sends the change events of every commit of `ctx` to the other processes on its PostgreSQL database.
 * Nothing on SQLite (one process serves it). Called once per context, when it is made.
 */
export function startChangeRelay(ctx: AppContext): void {
  const db = ctx.db;
  if (!db.listen || relays.has(ctx)) return;
  const relay: Relay = {
    node: randomToken(12),
    seq: 0,
    waiting: [],
    prunedAt: 0,
    scheduled: false,
    sending: Promise.resolve(),
    sequence: null,
    echo: null,
    onUnsent: null,
  };
  relays.set(ctx, relay);
  ctx.events.onCommit((events) => {
    if (!events.length) return;
    // Written now: what the record was at this commit, whatever a listener does with the event later.
    const room = eventRoom(relay);
    for (const e of events) relay.waiting.push({ wire: wire(e, room), event: e });
    if (relay.scheduled) return;
    relay.scheduled = true;
    // One statement at a time, oldest first: other nodes receive this process's changes in commit order.
    // The events of every transaction committed while the previous statement ran go out together, packed
    // into as few notices as fit (a notice per commit would wake every listening node once per commit).
    relay.sending = relay.sending.then(async () => {
      relay.scheduled = false;
      const outgoing = relay.waiting.splice(0);
      const wires = await stored(ctx, relay, outgoing.map((o) => o.wire));
      const notices = pack(relay, wires, outgoing.map((o) => o.event));
      while (notices.length) {
        const batch = notices.splice(0, NOTICES_PER_STATEMENT);
        if (relay.echo) for (const p of batch) relay.echo.set(p.s, p.events);
        if (await sendWithRetry(ctx, relay, batch)) continue;
        if (relay.echo) for (const p of batch) relay.echo.delete(p.s);
        relay.onUnsent?.();
      }
    });
  });
}

/**
 * The events as sent: the records too large for a notice stored first (committed before their notice goes
 * out, so the receiver finds them), each event naming its row; one that could not be stored asks the
 * receiver to read the record again. Stored records older than PAYLOAD_TTL_MS go, once a minute at most.
 */
async function stored(ctx: AppContext, relay: Relay, events: (string | Oversized)[]): Promise<string[]> {
  const out: string[] = [];
  let anyStored = false;
  for (const e of events) {
    if (typeof e === "string") {
      out.push(e);
      continue;
    }
    anyStored = true;
    const id = randomToken(16);
    try {
      await ctx.db.run("INSERT INTO _realtime_payloads (id, record, at) VALUES (?, ?, ?)", [id, e.record, Date.now()]);
      out.push(JSON.stringify({ ...e.base, p: id }));
    } catch (err) {
      ctx.log.warn("a large change event was sent without its record", { collection: e.base.c, error: String(err) });
      out.push(JSON.stringify({ ...e.base, x: 1 }));
    }
  }
  if (!anyStored || Date.now() - relay.prunedAt < 60_000) return out;
  relay.prunedAt = Date.now();
  await ctx.db.run("DELETE FROM _realtime_payloads WHERE at < ?", [Date.now() - PAYLOAD_TTL_MS]).catch(() => {});
  return out;
}

/** Settles once the change events committed so far have been sent to the other nodes (before the database closes). */
export function relayFlushed(ctx: AppContext): Promise<void> {
  return relays.get(ctx)?.sending ?? Promise.resolve();
}

function parseMessage(payload: string): Partial<Notice & Ask & Answer> | null {
  try {
    const m = JSON.parse(payload) as Partial<Notice & Ask & Answer>;
    return m && typeof m === "object" ? m : null;
  } catch {
    return null;
  }
}

const ACTIONS = new Set<ChangeAction>(["create", "update", "delete", "restore", "hard_delete"]);

/**
 * The event as the hub takes it: a record stored for it (`p`) read from `_realtime_payloads`; one left out
 * (`x`, or a stored one already gone) read again now (null when the record is gone).
 */
async function receivedEvent(ctx: AppContext, w: WireEvent): Promise<ChangeEvent | null> {
  if (!w || typeof w !== "object" || typeof w.c !== "string" || typeof w.i !== "string" || !ACTIONS.has(w.a)) return null;
  let record = w.r;
  if (!record && typeof w.p === "string") {
    const row = await ctx.db.get<{ record: string }>("SELECT record FROM _realtime_payloads WHERE id = ?", [w.p]);
    if (row) record = JSON.parse(row.record) as RecordJson;
  }
  if (!record) {
    const h = await findHandle(ctx, w.c);
    const found = h ? await fetchRecord(ctx, h.col, w.i) : null;
    if (!h || !found) return null;
    record = (await attachRelationFields(ctx, h, [found], ADMIN))[0];
  }
  return { collection: w.c, action: w.a, record, at: w.t, by: w.b };
}

/** The notice number just after the sender (`"s":S,`) and the first event's number at the end (`"g":G}`) of an own notice. */
const OWN_S = /^"s":(\d+),/;
const OWN_G = /"g":(\d+)\}$/;

/**
 * Listens for the change events of every process on the database (this one's included) and feeds them into the
 * realtime hub of `ctx`, numbered, in the order PostgreSQL delivers them (see OrderedFeed in hub.ts). The moment
 * the listening connection is lost (notices sent meanwhile are lost with it) every stream gets `reset`; the engine
 * listens again as soon as the database answers. Nothing on SQLite. Returns the function that stops listening.
 */
export async function listenForChanges(ctx: AppContext): Promise<() => Promise<void>> {
  const db = ctx.db;
  const relay = relays.get(ctx);
  if (!db.listen || !relay) return async () => {};
  const hub = realtimeHub(ctx);
  const send = (message: Ask | Answer) => db.run("SELECT pg_notify(?, ?)", [CHANGES_CHANNEL, JSON.stringify(message)]);
  const asked = new Map<string, (a: Answer) => void>();
  let incoming: Promise<void> = Promise.resolve();
  /** Runs `work` after what the notices received before it started; a failure does not stop what follows. */
  const inTurn = (work: () => Promise<void> | void) => {
    incoming = incoming.then(work).catch((err) => ctx.log.warn("a change of another node could not be delivered", { error: String(err) }));
  };
  const sequence = await ensureSequence(ctx, relay);
  const feed = hub.order(eventIds(String(await jwtKey(ctx)), Buffer.from(sequence.epoch, "hex")));
  relay.echo = new Map();
  relay.onUnsent = () => feed.reset("events_lost");

  // This process's own notices come back too: they are recognised by their first bytes, not parsed, and their
  // events taken from memory as committed.
  const own = `{"n":${JSON.stringify(relay.node)},`;
  const onOwn = (payload: string) => {
    const s = Number(OWN_S.exec(payload.slice(own.length))?.[1]);
    const g = Number(OWN_G.exec(payload.slice(-40))?.[1]);
    const echo = relay.echo;
    const events = echo?.get(s);
    if (echo) {
      // They come back in the order they were sent: one sent before this one and not back is lost.
      for (const k of echo.keys()) if (k <= s) echo.delete(k);
    }
    if (!events || !Number.isSafeInteger(g)) return;
    inTurn(() => {
      for (let i = 0; i < events.length; i++) feed.accept(events[i]!, g + i);
    });
  };
  const onNotice = (notice: Notice, unnumbered = false) => {
    inTurn(async () => {
      // The notice may name a collection or a field the sender has just made.
      recheckCatalog(ctx);
      for (let i = 0; i < notice.e.length; i++) {
        const w = notice.e[i]!;
        let event: ChangeEvent | null = null;
        try {
          event = await receivedEvent(ctx, w);
        } catch (err) {
          ctx.log.warn("a change of another node could not be delivered", { collection: String(w?.c), error: String(err) });
        }
        // Numbered whatever became of it, so the numbers that follow are known to be complete.
        if (!unnumbered) feed.accept(event, notice.g + i);
        else if (event) feed.acceptUnnumbered(event);
      }
    });
  };
  const onMessage = (payload: string) => {
    if (payload.startsWith(own)) return onOwn(payload);
    const m = parseMessage(payload);
    if (!m) return ctx.log.warn("a change notice that is not one was ignored", { bytes: payload.length });
    if (Array.isArray(m.e) && typeof m.n === "string") {
      // A node of an earlier version (during a rolling upgrade) does not number its events: they are delivered
      // live, and held by no resume (see HeldEvent.unnumbered).
      onNotice(m as Notice, !Number.isSafeInteger(m.g));
    } else if (m.to === relay.node && typeof m.q === "string") {
      void answer(ctx, hub, m as Ask).then(send).catch((err) => ctx.log.warn("a subscribe call of another node was not answered", { error: String(err) }));
    } else if (m.to === relay.node && typeof m.p === "string") {
      asked.get(m.p)?.(m as Answer);
    }
  };
  let listened = false;
  let lostAt = 0;
  const onListen = () => {
    const again = listened;
    listened = true;
    if (again) ctx.catalog.stale = true;
    // Where the sequence stands once listening: every event numbered after it reaches this node.
    inTurn(async () => {
      let at: Sequence;
      try {
        at = await readSequence(ctx);
      } catch (err) {
        // The connection is lost again already: the next acknowledgement reads it.
        ctx.log.warn("realtime: where the change sequence stands could not be read", { error: String(err) });
        return;
      }
      feed.listening(at.n);
      if (again) ctx.log.info("realtime: hearing other nodes' changes again", { after_ms: Date.now() - lostAt });
    });
  };
  const onLost = (err: unknown) => {
    lostAt = Date.now();
    // The events of this process's notices on their way are kept: one whose sending is retried until the database
    // is back comes back once this node listens again, and reaches its streams then (those never heard of are
    // dropped when a later one comes back, see onOwn).
    // IMPORTANT: at once, not once the connection is back: meanwhile the other nodes' changes are missed, and a
    // stream left open would look complete while it is not.
    feed.lost("disconnected");
    ctx.log.warn("realtime: lost the connection that hears other nodes' changes; every stream was reset; listening again", {
      error: String(err),
    });
  };
  const stop = await db.listen(CHANGES_CHANNEL, onMessage, onListen, onLost);
  await incoming;
  const limits = sharedLimits(ctx, db, relay.node);

  // POST /realtime reached this node for a stream of another: ask that node, which answers as it would.
  hub.attachNode(relay.node, async (clientId, topics, identity) => {
    const ask: Ask = { q: randomToken(12), to: clientId.slice(0, clientId.indexOf(".")), from: relay.node, c: clientId, s: topics, i: await identityForNode(ctx, identity) };
    const text = JSON.stringify(ask);
    if (bytes(text) > MAX_NOTICE_BYTES)
      throw badRequest("too many subscriptions to pass to the server holding this stream: send them in several calls, or on the GET");
    const answered = new Promise<Answer | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), FORWARD_TIMEOUT_MS);
      asked.set(ask.q, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
    });
    try {
      await send(ask);
      const a = await answered;
      // No answer: no node holds that stream (any more).
      if (!a) throw notFound("unknown client_id: open GET /api/v1/realtime first");
      if (a.err) throw new AppError(a.err.status, a.err.code, a.err.message, a.err.extra, a.err.headers);
      return a.ok!;
    } finally {
      asked.delete(ask.q);
    }
  }, limits);
  return async () => {
    limits.stop();
    relay.echo = null;
    relay.onUnsent = null;
    await stop();
  };
}

/** Runs another node's subscribe call on this node's stream; the answer to send back. */
async function answer(ctx: AppContext, hub: RealtimeHub, ask: Ask): Promise<Answer> {
  try {
    const identity: Identity = await identityFromNode(ctx, ask.i);
    return { p: ask.q, to: ask.from, ok: await hub.subscribe(ask.c, ask.s, identity) };
  } catch (err) {
    if (!(err instanceof AppError)) {
      ctx.log.error("a subscribe call of another node failed", { error: String(err) });
      return { p: ask.q, to: ask.from, err: { status: 500, code: "internal", message: "internal error", extra: {}, headers: {} } };
    }
    return { p: ask.q, to: ask.from, err: { status: err.status, code: err.code, message: err.message, extra: err.extra, headers: err.headers } };
  }
}
