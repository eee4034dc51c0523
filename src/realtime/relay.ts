import { ADMIN } from "../principal.ts";
import { findHandle, recheckCatalog } from "../catalog/catalog.ts";
import type { AppContext } from "../context.ts";
import { randomToken } from "../crypto.ts";
import type { ChangeAction, ChangeEvent } from "../events/bus.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { AppError, badRequest, notFound } from "../errors.ts";
import { realtimeHub, type RealtimeHub, type SubscribeResult } from "./hub.ts";
import { identityForNode, identityFromNode, type Identity, type WireIdentity } from "./identity.ts";
import { sharedLimits } from "./shared-limits.ts";

/**
 * Change events between nodes sharing one PostgreSQL database (CONTRACT §10, §11). Every process on
 * PostgreSQL (a server or a CLI command) sends the change events of its commits with NOTIFY, in the
 * order it committed them; every server listens and feeds what other processes sent into its own
 * realtime hub, so its subscribers get writes made anywhere. A process skips its own notices: its
 * events already reached its hub through the event bus.
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

/** An event whose record does not fit a notice, as committed: stored, then sent naming its row (see send). */
interface Oversized {
  base: WireEvent;
  record: string;
}

/** How long a stored record is kept for the other nodes to read (they read it as its notice arrives). */
const PAYLOAD_TTL_MS = 10 * 60_000;

/** A notice: the sending process, its running number (which also keeps equal notices of one statement apart), its events. */
interface Notice {
  n: string;
  s: number;
  e: WireEvent[];
}

interface Relay {
  node: string;
  seq: number;
  /** Change events committed and not yet sent, as sent (`wire`), oldest first, of any number of transactions. */
  waiting: (string | Oversized)[];
  /** When stored records were last cleared out. */
  prunedAt: number;
  scheduled: boolean;
  /** Settles when everything queued so far has been sent (or given up on). */
  sending: Promise<void>;
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
// The smallest notice that can carry an event: `{"n":…,"s":…,"e":[…]}` around it.
const envelope = (relay: Relay) => bytes(JSON.stringify({ n: relay.node, s: Number.MAX_SAFE_INTEGER, e: [] }));

/**
 * The event as sent, or, for a record too large for a notice, what `send` stores. A hard delete (its record
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

/** The notices carrying the events (each as `wire` wrote it), in order, each within MAX_NOTICE_BYTES. */
function pack(relay: Relay, wires: readonly string[]): string[] {
  const room = eventRoom(relay);
  const out: string[] = [];
  let parts: string[] = [];
  let size = 0;
  const close = () => {
    if (!parts.length) return;
    out.push(`{"n":${JSON.stringify(relay.node)},"s":${++relay.seq},"e":[${parts.join(",")}]}`);
    parts = [];
    size = 0;
  };
  for (const w of wires) {
    if (size + bytes(w) + 1 > room) close();
    parts.push(w);
    size += bytes(w) + 1;
  }
  close();
  return out;
}

/**
 * Sends the change events of every commit of `ctx` to the other processes on its PostgreSQL database.
 * Nothing on SQLite (one process serves it). Called once per context, when it is made.
 */
export function startChangeRelay(ctx: AppContext): void {
  const db = ctx.db;
  if (!db.listen || relays.has(ctx)) return;
  const relay: Relay = { node: randomToken(12), seq: 0, waiting: [], prunedAt: 0, scheduled: false, sending: Promise.resolve() };
  relays.set(ctx, relay);
  ctx.events.onCommit((events) => {
    if (!events.length) return;
    // Written now: what the record was at this commit, whatever a listener does with the event later.
    const room = eventRoom(relay);
    for (const e of events) relay.waiting.push(wire(e, room));
    if (relay.scheduled) return;
    relay.scheduled = true;
    // One statement at a time, oldest first: other nodes receive this process's changes in commit order.
    // The events of every transaction committed while the previous statement ran go out together, packed
    // into as few notices as fit (a notice per commit would wake every listening node once per commit).
    relay.sending = relay.sending.then(async () => {
      relay.scheduled = false;
      const notices = pack(relay, await stored(ctx, relay, relay.waiting.splice(0)));
      while (notices.length) {
        const batch = notices.splice(0, NOTICES_PER_STATEMENT);
        try {
          await db.run(`SELECT ${batch.map(() => "pg_notify(?, ?)").join(", ")}`, batch.flatMap((n) => [CHANGES_CHANNEL, n]));
        } catch (err) {
          // The database is gone: the listeners' connections are gone too, and they reset their streams.
          ctx.log.warn("change events not relayed to other nodes", { events: batch.length, error: String(err) });
        }
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
  if (typeof w.c !== "string" || typeof w.i !== "string" || !ACTIONS.has(w.a)) return null;
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

/**
 * Listens for the change events of the other processes on the database and feeds them into the
 * realtime hub of `ctx`, in the order each process committed them. After the listening connection
 * was lost (notices sent meanwhile are lost with it), the catalog is reloaded and every stream gets
 * `reset`. Nothing on SQLite. Returns the function that stops listening.
 */
export async function listenForChanges(ctx: AppContext): Promise<() => Promise<void>> {
  const db = ctx.db;
  const relay = relays.get(ctx);
  if (!db.listen || !relay) return async () => {};
  const hub = realtimeHub(ctx);
  const send = (message: Ask | Answer) => db.run("SELECT pg_notify(?, ?)", [CHANGES_CHANNEL, JSON.stringify(message)]);
  const asked = new Map<string, (a: Answer) => void>();
  let incoming: Promise<void> = Promise.resolve();
  let listening = false;

  const onNotice = (notice: Partial<Notice>) => {
    incoming = incoming.then(async () => {
      // The notice may name a collection or a field the sender has just made.
      recheckCatalog(ctx);
      for (const w of notice.e!) {
        try {
          const event = await receivedEvent(ctx, w);
          if (event) hub.accept(event);
        } catch (err) {
          ctx.log.warn("a change of another node could not be delivered", { collection: String(w.c), error: String(err) });
        }
      }
    });
  };
  // This process's own notices come back too: they are recognised by their first bytes, not parsed.
  const own = `{"n":${JSON.stringify(relay.node)},`;
  const onMessage = (payload: string) => {
    if (payload.startsWith(own)) return;
    const m = parseMessage(payload);
    if (!m) return ctx.log.warn("a change notice that is not one was ignored", { bytes: payload.length });
    if (Array.isArray(m.e) && typeof m.n === "string") {
      if (m.n !== relay.node) onNotice(m);
    } else if (m.to === relay.node && typeof m.q === "string") {
      void answer(ctx, hub, m as Ask).then(send).catch((err) => ctx.log.warn("a subscribe call of another node was not answered", { error: String(err) }));
    } else if (m.to === relay.node && typeof m.p === "string") {
      asked.get(m.p)?.(m as Answer);
    }
  };
  const onListen = () => {
    if (!listening) {
      listening = true;
      return;
    }
    ctx.catalog.stale = true;
    hub.resetAll("reconnected");
  };
  const stop = await db.listen(CHANGES_CHANNEL, onMessage, onListen);
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
