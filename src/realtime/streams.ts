import type { Identity } from "./identity.ts";
import type { SseSink } from "./sse.ts";
import type { Topic } from "./topics.ts";

/** One open event stream of this process. */
export interface Stream {
  id: string;
  ip: string;
  identity: Identity;
  topics: Topic[];
  /** Its topics by collection, so an event looks only at the topics on its own collection. */
  byCollection: Map<string, Topic[]>;
  sink: SseSink;
  /** Replay from this event number when the first subscriptions arrive; null once done. */
  resumeFrom: number | null;
  /** Number of the last event sent, so a replay and the live flow never send one twice. */
  lastSeq: number;
  /** This process's own events counted at or below this (committed before the stream opened) are not sent (hub.ts, OwnEvents). */
  ownAfter: number;
  /** The topics counted for it against its address's limit (see claimTopics). */
  claimed: number;
  /** Subscribe calls on it not yet over. */
  subscribing: number;
}

/** What the streams of one address hold: streams open or being opened, and their topics set or being set. */
export interface AddressUse {
  streams: number;
  topics: number;
}

/** The open streams of a process, and who follows which collection. */
export interface StreamRegistry {
  streams: Map<string, Stream>;
  /** Collection name → the streams with a topic on it, so an event of a collection nobody follows costs nothing. */
  followers: Map<string, Set<Stream>>;
  /** How many times a stream's topics were set: what was gathered from the follower index holds while it stands. */
  changes: number;
  /** Each address's streams and topics, counted as they are claimed (see claim): no pass over the streams. */
  byAddress: Map<string, AddressUse>;
}

export function createRegistry(): StreamRegistry {
  return { streams: new Map(), followers: new Map(), changes: 0, byAddress: new Map() };
}

export function addStream(reg: StreamRegistry, s: Stream): void {
  reg.streams.set(s.id, s);
}

/**
 * Removes a stream from the registry and the follower index, and gives back what it counted against its
 * address's limits; false when it was no longer registered.
 */
export function removeStream(reg: StreamRegistry, s: Stream): boolean {
  const was = reg.streams.get(s.id) === s;
  if (was) {
    reg.streams.delete(s.id);
    claim(reg, s.ip, -1, -s.claimed);
  }
  setStreamTopics(reg, s, []);
  return was;
}

/** Sets a stream's topics and keeps the follower index in step. */
export function setStreamTopics(reg: StreamRegistry, s: Stream, topics: Topic[]): void {
  reg.changes++;
  for (const name of s.byCollection.keys()) {
    const set = reg.followers.get(name);
    set?.delete(s);
    if (set && !set.size) reg.followers.delete(name);
  }
  s.topics = topics;
  s.byCollection = new Map();
  for (const t of topics) {
    const list = s.byCollection.get(t.collection);
    if (list) list.push(t);
    else {
      s.byCollection.set(t.collection, [t]);
      (reg.followers.get(t.collection) ?? reg.followers.set(t.collection, new Set()).get(t.collection)!).add(s);
    }
  }
}

const NOTHING: AddressUse = { streams: 0, topics: 0 };

/** The streams of an address on this process (open, or being opened), and their topics. */
export function addressUsage(reg: StreamRegistry, ip: string): AddressUse {
  return reg.byAddress.get(ip) ?? NOTHING;
}

/**
 * Counts `streams` more streams and `topics` more topics for an address (negative to give them back). A limit is
 * checked and claimed with no await between the two, so requests from one address at once are counted one
 * after the other, never all against the same count.
 */
export function claim(reg: StreamRegistry, ip: string, streams: number, topics: number): void {
  const use = reg.byAddress.get(ip) ?? reg.byAddress.set(ip, { streams: 0, topics: 0 }).get(ip)!;
  use.streams += streams;
  use.topics += topics;
  if (use.streams <= 0 && use.topics <= 0) reg.byAddress.delete(ip);
}

/** Sets the topics a registered stream counts against its address's limit (nothing once it is removed). */
export function claimTopics(reg: StreamRegistry, s: Stream, topics: number): void {
  if (reg.streams.get(s.id) !== s || topics === s.claimed) return;
  claim(reg, s.ip, 0, topics - s.claimed);
  s.claimed = topics;
}
