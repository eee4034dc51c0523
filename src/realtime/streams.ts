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
}

/** The open streams of a process, and who follows which collection. */
export interface StreamRegistry {
  streams: Map<string, Stream>;
  /** Collection name → the streams with a topic on it, so an event of a collection nobody follows costs nothing. */
  followers: Map<string, Set<Stream>>;
  /** How many times a stream's topics were set: what was gathered from the follower index holds while it stands. */
  changes: number;
}

export function createRegistry(): StreamRegistry {
  return { streams: new Map(), followers: new Map(), changes: 0 };
}

export function addStream(reg: StreamRegistry, s: Stream): void {
  reg.streams.set(s.id, s);
}

/** Removes a stream from the registry and the follower index; false when it was no longer registered. */
export function removeStream(reg: StreamRegistry, s: Stream): boolean {
  const was = reg.streams.get(s.id) === s;
  if (was) reg.streams.delete(s.id);
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

/** The streams of an address on this process, and their topics. */
export function addressUsage(reg: StreamRegistry, ip: string): { streams: number; topics: number } {
  let streams = 0;
  let topics = 0;
  for (const s of reg.streams.values())
    if (s.ip === ip) {
      streams++;
      topics += s.topics.length;
    }
  return { streams, topics };
}
