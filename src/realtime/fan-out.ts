import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { findHandle } from "../catalog/catalog.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { Collection } from "../catalog/types.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { readDecision } from "../records/access.ts";
import { and, col as col_, exists, FALSE, reservedAlias, TRUE, val, type Cond } from "../db/condition.ts";
import type { CheckedRule } from "../rules/expr/check.ts";
import { compileRule, compileRuleForUsers, decideRule, decideRuleForUsers, readsOnlyAuthId } from "../rules/expr/compile.ts";
import { checkedRuleOf, isExpressionRule } from "../rules/expr/rule.ts";
import { ruleUserOf } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { settleDecisions, USER_ID, usersPassing } from "../rules/expr/settle.ts";
import type { RecordJson } from "../query/rows.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { FilterAsks } from "./filter-queries.ts";
import { currentAccess } from "./identity.ts";
import { filterFor, meetsMemoryTests } from "./match.ts";
import type { HeldEvent } from "./replay.ts";
import { sseFrame } from "./sse.ts";
import type { Stream } from "./streams.ts";
import type { Topic } from "./topics.ts";
import { usersAccessVersion, type UserAccess } from "../tables/users.ts";

/**
 * The largest event frame sent with its record: above it (a record past the 16 MiB body limit, which only a hook
 * could write) the event carries a reference instead (`{ _id }` and `ref: true`; the client reads the record).
 */
export const MAX_EVENT_FRAME_BYTES = 32 * 1024 * 1024;

/** How long the fan-out of one event holds the event loop before it lets other work (requests) run. */
const SLICE_MS = 50;
/** Streams looked at between two looks at the clock. */
const STREAMS_PER_LOOK = 64;

/** One event to send: as committed (live), or as held (a replay, where a large record is a reference only). */
export interface Delivery {
  held: HeldEvent;
  event: ChangeEvent;
  /** True when `event.record` is only the id and owner of a record held by reference. */
  stub: boolean;
}

/** What the delivery of one batch of events shares. */
export interface FanOut {
  /** Who each stream reads as in this batch: a user with the roles the user has now (readersOf). */
  readers: Map<Stream, Principal>;
  /** The `id:` of a held event. */
  idOf(held: HeldEvent): string;
  /** Ends a stream whose buffer overflowed. */
  drop(s: Stream): void;
  /** The distinct readers of each collection's streams, gathered once for the batch (see readerGroups). */
  groups?: Map<string, ReaderGroups>;
  /** A count that changes whenever a stream's topics change (the stream registry's), so groups are known to be current. */
  changes?: () => number;
  /** Frames sent so far. */
  sent: number;
}

/** The distinct readers among the streams that follow a collection: users (by id) and the other kinds of caller. */
interface ReaderGroups {
  /** The registry's count of topic changes when they were gathered (a stream that follows the collection since is not among them). */
  changes: number;
  userIds: Set<string>;
  users: Extract<Principal, { kind: "user" }>[];
  others: Principal[];
  /** The streams of each reader (by ruleReaderKey). */
  streamsOf: Map<string, Stream[]>;
}

/** Lets the event loop run (other requests) before going on. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * The users' access as read for earlier batches, kept while the users' access version stands (a trigger changes it
 * with every change of a user's access or a user's deletion, by any process: see usersAccessVersion).
 */
export interface AccessCache {
  version: string | null;
  byUser: Map<string, UserAccess>;
  /** How many users it keeps at most: past that (users whose streams closed) it is read again whole. */
  limit: number;
}

export const newAccessCache = (limit = 1000): AccessCache => ({ version: null, byUser: new Map(), limit });

/**
 * The principal each stream's user reads as now, for the streams of users among `streams`: their
 * roles and metadata as stored (CONTRACT §10: "may read the record at that moment"), not as they were when the
 * stream was opened. What `cache` holds is used while no user's access changed since it was read (one small query
 * tells, or `version` as read before the call); the users it lacks are read in one query. Streams of admin and
 * anonymous callers are not listed.
 */
export async function readersOf(ctx: AppContext, streams: Iterable<Stream>, cache = newAccessCache(), version?: string): Promise<Map<Stream, Principal>> {
  const byUser = new Map<string, Stream[]>();
  for (const s of streams) {
    const p = s.identity.principal;
    if (p.kind === "user") (byUser.get(p.userId) ?? byUser.set(p.userId, []).get(p.userId)!).push(s);
  }
  const readers = new Map<Stream, Principal>();
  if (!byUser.size) return readers;
  // IMPORTANT: the version before the rows: a change committed between the two reads makes the next version differ.
  version ??= await usersAccessVersion(ctx.db);
  if (version !== cache.version || cache.byUser.size > Math.max(cache.limit, byUser.size)) {
    cache.byUser.clear();
    cache.version = version;
  }
  const missing: string[] = [];
  for (const id of byUser.keys()) if (!cache.byUser.has(id)) missing.push(id);
  if (missing.length) {
    const access = await currentAccess(ctx, missing);
    for (const id of missing) cache.byUser.set(id, access.get(id) ?? GONE);
  }
  for (const [userId, list] of byUser) {
    const now = cache.byUser.get(userId)!;
    for (const s of list) {
      const p = s.identity.principal as Extract<Principal, { kind: "user" }>;
      readers.set(s, sameAccess(p, now) ? p : { ...p, ...now });
    }
  }
  return readers;
}

/** What a user who no longer exists reads with. */
const GONE: UserAccess = { roles: [], metadata: {}, email: "", verified: false };

/** Whether a principal already holds this access (metadata compared by object: both unchanged, or both empty). */
function sameAccess(p: Extract<Principal, { kind: "user" }>, now: UserAccess): boolean {
  if (p.email !== now.email || p.verified !== now.verified || p.roles.length !== now.roles.length) return false;
  if (p.metadata !== now.metadata && (Object.keys(p.metadata).length || Object.keys(now.metadata).length)) return false;
  return p.roles.every((r, i) => r === now.roles[i]);
}

/** A key equal for streams that read alike: the caller, and a user's roles. */
const readerKey = (s: Stream, reader: Principal) => (reader.kind === "user" ? `${s.identity.key}\u0000${reader.roles.join(",")}` : s.identity.key);

/**
 * Whether a stream's topics on the event's collection take the record: true, false, or the keys of
 * the filter conditions (added to `asks`) the database must answer first, any one of them enough.
 */
function topicsTake(topics: Topic[], col: Collection, d: Delivery, s: Stream, reader: Principal, asks: FilterAsks): boolean | string[] {
  const record = d.event.record;
  let keys: string[] | null = null;
  for (const t of topics) {
    if (t.id !== null && t.id !== record._id) continue;
    if (!t.filter) return true;
    const filter = filterFor(t.filter, col);
    // A record held by reference is matched by the database on all conditions; else its columns first, in memory.
    if (!d.stub && !meetsMemoryTests(filter, record)) continue;
    const query = d.stub ? filter.whole : filter.query;
    if (!query) return true;
    (keys ??= []).push(asks.add(query, reader, readerKey(s, reader)));
  }
  return keys ?? false;
}

/**
 * Sends one event to every stream among `targets` whose topics take it and who may read it. The read
 * rule is checked first, on the record in memory with the collection's rule as it is now; then the
 * topics (filter conditions on relation fields answered for all streams together, see FilterAsks);
 * then one frame per distinct view of the record, shared by the streams that see it alike.
 */
export async function deliverEvent(ctx: AppContext, d: Delivery, targets: Iterable<Stream>, fan: FanOut): Promise<void> {
  const { held, event: e } = d;
  // The collection as it is now (its read rule decides who gets the event): checked against the database at
  // most once per event-loop turn, so the events delivered together share one check, and a rule another
  // node or the CLI changed holds for the next event.
  const h = await findHandle(ctx, e.collection);
  if (!h) return;
  const col = h.col;
  // Its expression rules checked against this reading of the catalog (readDecision reads them without one).
  prepareRules(h.catalog);
  // The collection a resume will compare with (see replayable), where it was not known at commit.
  held.generation ??= col.createdAt;
  const frames = FrameSet.of(ctx, h, d, () => fan.idOf(held));
  const readers = fan.readers.size ? fan.readers : null;
  let common: Uint8Array | undefined;
  // The frame made for this reader, if there is one yet (a reader's own is made, awaited, once).
  const made = (s: Stream, reader: Principal) => (frames.perReader ? frames.cached(readerKey(s, reader)) : (common ??= frames.common()));
  const sendTo = (s: Stream, frame: Uint8Array) => {
    fan.sent++;
    if (!held.unnumbered) s.lastSeq = held.seq;
    if (!s.sink.send(frame)) fan.drop(s);
  };
  const asks = new FilterAsks();
  const pending: [Stream, Principal, string[]][] = [];
  // An expression read rule is decided for every reader of the event at once, before the first stream needs it.
  const groups = isExpressionRule(col.rules.read) ? readerGroups(fan, col.name, targets, readers) : null;
  const ruled = groups ? await ruleDecisions(ctx, col, e.record, d.stub, groups) : null;
  let looked = 0;
  // Very many streams, or topics heavy to match, do not hold the event loop for longer than SLICE_MS at a time.
  let since = performance.now();
  // Under an expression rule only the streams of the readers it passes are looked at (a room's members, not all).
  for (const s of ruled ? streamsPassing(groups!, ruled) : targets) {
    if (++looked % STREAMS_PER_LOOK === 0 && performance.now() - since > SLICE_MS) {
      await nextTurn();
      since = performance.now();
    }
    if (held.seq <= s.lastSeq && !held.unnumbered) continue;
    // Committed here before the stream opened (its notice came back after): not a change after the subscription.
    if (held.own !== undefined && held.own <= s.ownAfter) continue;
    const topics = s.byCollection.get(col.name);
    if (!topics) continue;
    const reader = readers?.get(s) ?? s.identity.principal;
    // SECURITY: the read rule before anything else: a stream that may not read the record gets nothing
    // and costs nothing more (no filter is matched, no query asked for it).
    // Absent from the decisions (true only) is refused, as a reader gathered after they were made is.
    if (ruled ? !passes(ruled, reader) : readDecision(col, reader, e.record) !== true) continue;
    const taken = topicsTake(topics, col, d, s, reader, asks);
    if (taken === true) sendTo(s, made(s, reader) ?? (await frames.forReader(readerKey(s, reader), reader)));
    else if (taken) pending.push([s, reader, taken]);
  }
  if (!asks.size) return;
  const answers = await asks.answer(ctx, h, String(e.record._id));
  for (const [s, reader, keys] of pending)
    if (keys.some((k) => answers.get(k))) sendTo(s, made(s, reader) ?? (await frames.forReader(readerKey(s, reader), reader)));
}

/** Readers a rule answers alike: one user (their roles and metadata are read once per batch), or one kind of caller. */
const ruleReaderKey = (p: Principal) => (p.kind === "user" ? userKey(p.userId) : p.kind);
const userKey = (id: string) => `u\u0000${id}`;

/** The alias of the stored row an expression rule is asked of, for a record held by reference. */
const STORED = reservedAlias("s", 0);

/** The distinct readers of the streams among `targets` that follow `collection`, gathered once per batch and collection. */
function readerGroups(fan: FanOut, collection: string, targets: Iterable<Stream>, readers: Map<Stream, Principal> | null): ReaderGroups {
  const changes = fan.changes?.() ?? -1;
  const known = fan.groups?.get(collection);
  if (known && changes >= 0 && known.changes === changes) return known;
  const g: ReaderGroups = { changes, userIds: new Set(), users: [], others: [], streamsOf: new Map() };
  for (const s of targets) {
    if (!s.byCollection.has(collection)) continue;
    const reader = readers?.get(s) ?? s.identity.principal;
    const key = ruleReaderKey(reader);
    const list = g.streamsOf.get(key);
    if (list) {
      list.push(s);
      continue;
    }
    g.streamsOf.set(key, [s]);
    if (reader.kind === "user") {
      g.userIds.add(reader.userId);
      g.users.push(reader);
    } else g.others.push(reader);
  }
  (fan.groups ??= new Map()).set(collection, g);
  return g;
}

/** The streams of the readers a rule lets through (see ruleDecisions). */
function* streamsPassing(g: ReaderGroups, p: Passing): Generator<Stream> {
  for (const id of p.users) yield* g.streamsOf.get(userKey(id)) ?? [];
  for (const kind of p.kinds) yield* g.streamsOf.get(kind) ?? [];
}

/**
 * An expression read rule on one event's record for every distinct reader of its collection's streams (the streams of one
 * user read with the same roles and metadata in a batch, see readersOf), as the users and kinds of caller it passes: decided in
 * memory where it can be, the rest (relation paths, `@exists`) asked of the database. A rule that reads nothing
 * of the user but `@auth.id` is compiled once and asked for all users in one statement (usersPassing), so a
 * thousand members of rooms cost one query per event; other rules, one condition per user, a hundred to a
 * statement (settleDecisions).
 */
async function ruleDecisions(
  ctx: AppContext,
  col: Collection,
  record: RecordJson,
  stub: boolean,
  g: ReaderGroups,
): Promise<Passing> {
  const rule = checkedRuleOf(col, "read");
  const now = Date.now();
  const byId = rule !== undefined && readsOnlyAuthId(rule);
  // A record held by reference carries its id only: the rule is asked of the stored row.
  const ofStored = (rule: Cond) => exists(col.name, STORED, and([{ k: "cmp", op: "=", a: col_(STORED, "_id", "text"), b: val(String(record._id)) }, rule]));
  const order: Principal[] = [];
  const decisions: (boolean | Cond)[] = [];
  const decide = (reader: Principal) => {
    order.push(reader);
    if (reader.kind === "user" && rule) {
      const env = { auth: ruleUserOf(reader), now, body: null };
      decisions.push(stub ? ofStored(compileRule(rule, env, { table: STORED })) : decideRule(rule, record, env));
      return;
    }
    // The admin, anonymous readers, and (failing closed) users under a rule not checked against this catalog.
    const d = readDecision(col, reader, record);
    decisions.push(typeof d !== "object" ? d : stub ? ofStored(compileRule(d.rule, d.env, { table: STORED })) : decideRule(d.rule, record, d.env));
  };
  g.others.forEach(decide);
  if (!byId) g.users.forEach(decide);
  const [answers, passing] = await Promise.all([
    settleDecisions(ctx.db, decisions),
    byId && g.userIds.size ? usersPassing(ctx.db, usersCondition(rule!, record, stub, now, ofStored), g.userIds) : null,
  ]);
  const out: Passing = { users: passing ?? new Set(), kinds: new Set() };
  order.forEach((reader, i) => {
    if (!answers[i]) return;
    if (reader.kind === "user") out.users.add(reader.userId);
    else out.kinds.add(reader.kind);
  });
  return out;
}

/** Who an event's read rule lets through: users by id, and other kinds of caller (the admin, anonymous). */
interface Passing {
  users: Set<string>;
  kinds: Set<Principal["kind"]>;
}

const passes = (p: Passing, reader: Principal) => (reader.kind === "user" ? p.users.has(reader.userId) : p.kinds.has(reader.kind));

/** The read rule for every user at once (readsOnlyAuthId): a condition on USER_ID, or true or false for all. */
function usersCondition(rule: CheckedRule, record: RecordJson, stub: boolean, now: number, ofStored: (c: Cond) => Cond): Cond {
  if (stub) return ofStored(compileRuleForUsers(rule, now, USER_ID, { table: STORED }));
  const d = decideRuleForUsers(rule, record, now, USER_ID);
  return d === true ? TRUE : d === false ? FALSE : d;
}

/**
 * The frames of one event, each encoded once. Events carry the admin's view; only a `many` field
 * (readable targets only) differs per reader, roles included. A record held for replay by reference (over
 * 1 MiB, see replay.ts) is replayed as one, and a frame over MAX_EVENT_FRAME_BYTES goes out as one: `record`
 * holds its `_id` and `ref` is true (the client reads it).
 */
class FrameSet {
  private readonly frames = new Map<string, Uint8Array>();
  private readonly action: string;

  private constructor(
    private readonly ctx: AppContext,
    private readonly h: CollectionHandle,
    private readonly d: Delivery,
    private readonly idOf: () => string,
    /** True when the frame differs per reader (the collection has a `many` field, and the record is sent). */
    readonly perReader: boolean,
  ) {
    this.action = d.event.action === "hard_delete" ? "delete" : d.event.action;
  }

  static of(ctx: AppContext, h: CollectionHandle, d: Delivery, id: () => string): FrameSet {
    const whole = d.event.action !== "hard_delete" && !d.stub;
    const perReader = whole && h.from.some((r) => r.type === "many");
    return new FrameSet(ctx, h, d, id, perReader);
  }

  /** The frame every reader gets (perReader false): the record, `{ _id }` of a hard delete, or a reference. */
  common(): Uint8Array {
    let frame = this.frames.get("");
    if (frame === undefined) {
      const e = this.d.event;
      const frameOf = e.action === "hard_delete" ? this.encode({ _id: e.record._id }) : this.d.stub ? this.reference() : this.encode(e.record);
      this.frames.set("", (frame = frameOf));
    }
    return frame;
  }

  /** The frame made for readers of `key`, if made. */
  cached(key: string): Uint8Array | undefined {
    return this.frames.get(key);
  }

  /** The frame of readers of `key`: the record with its `many` fields as `reader` may read them. */
  async forReader(key: string, reader: Principal): Promise<Uint8Array> {
    const copy = { ...this.d.event.record };
    await attachRelationFields(this.ctx, this.h, [copy], reader);
    const frame = this.encode(copy);
    this.frames.set(key, frame);
    return frame;
  }

  private encode(record: RecordJson): Uint8Array {
    const frame = sseFrame(this.action, JSON.stringify({ collection: this.h.name, action: this.action, record }), this.idOf());
    return frame.byteLength > MAX_EVENT_FRAME_BYTES ? this.reference() : frame;
  }

  private reference(): Uint8Array {
    const data = { collection: this.h.name, action: this.action, record: { _id: this.d.event.record._id }, ref: true };
    return sseFrame(this.action, JSON.stringify(data), this.idOf());
  }
}
