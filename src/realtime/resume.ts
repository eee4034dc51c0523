import { jwtKey } from "../auth/keys.ts";
import type { AppContext } from "../context.ts";
import { findCollection } from "../catalog/catalog.ts";
import { presentIds } from "../query/rows.ts";
import { eventIds, type EventIds } from "./event-ids.ts";
import { ReplayBuffer, type HeldEvent } from "./replay.ts";

const recordKey = (e: HeldEvent) => `${e.event.collection}\u0000${String(e.event.record._id)}`;

/**
 * The held events a resume may send, oldest first (CONTRACT §8c): none of a record hard-deleted since
 * (its hard delete itself goes out: it shows nothing but the id), none of a record that is no longer
 * there, and none of a collection dropped since, even when one of that name was made again. Asks
 * the database once per collection.
 */
export async function replayable(ctx: AppContext, held: HeldEvent[]): Promise<HeldEvent[]> {
  // A hard delete later in the buffer rules out the record's earlier events (even if its id was used again).
  const deleted = new Set<string>();
  const kept: HeldEvent[] = [];
  for (let i = held.length - 1; i >= 0; i--) {
    const h = held[i];
    if (h.event.action === "hard_delete") deleted.add(recordKey(h));
    else if (deleted.has(recordKey(h))) continue;
    kept.push(h);
  }
  kept.reverse();
  const byCollection = new Map<string, HeldEvent[]>();
  for (const h of kept) (byCollection.get(h.event.collection) ?? byCollection.set(h.event.collection, []).get(h.event.collection)!).push(h);
  const out = new Set<HeldEvent>();
  for (const [name, events] of byCollection) {
    const col = await findCollection(ctx, name);
    if (!col) continue;
    const same = events.filter((h) => h.generation === null || h.generation === col.createdAt);
    const ids = [...new Set(same.filter((h) => h.event.action !== "hard_delete").map((h) => String(h.event.record._id)))];
    const present = await presentIds(ctx, col, ids);
    for (const h of same) if (h.event.action === "hard_delete" || present.has(String(h.event.record._id))) out.add(h);
  }
  return kept.filter((h) => out.has(h));
}

/**
 * What a process keeps to let streams resume: the held events, and how their ids are made. Events are numbered by
 * this process (one server on SQLite), or by the database (several nodes on PostgreSQL: OrderedFeed in hub.ts), whose
 * numbers every node shares, so a stream resumes on any node.
 */
export interface ResumeState {
  buffer: ReplayBuffer;
  /** The ids of this process's events; made when the first stream opens (they need the key from the database). */
  ids: EventIds | null;
  /** Streams may not resume from an event number below this one (changes were missed after it). */
  floor: number;
  /**
   * Changes may be being missed now (the connection that hears other nodes is lost, or not yet back to
   * where the sequence stands): no stream may resume until it is known what was missed (OrderedFeed.listening).
   */
  gap: boolean;
  /**
   * Events are held from the first stream on. Before it no client holds an event id of this process
   * (ids carry its epoch), so none could be resumed: a process nobody follows (a bulk load) does not
   * keep its last 20,000 records in memory for five minutes.
   */
  holding: boolean;
}

export function createResumeState(): ResumeState {
  return { buffer: new ReplayBuffer(), ids: null, floor: 0, gap: false, holding: false };
}

/** Makes the ids of this process's events (an epoch of its own), once. */
export async function prepareIds(ctx: AppContext, r: ResumeState): Promise<EventIds> {
  return (r.ids ??= eventIds(String(await jwtKey(ctx)), crypto.getRandomValues(new Uint8Array(7))));
}

/** The `id:` of event number `seq` (the ids exist once a stream opened: before, nothing is sent). */
export function idAt(r: ResumeState, seq: number): string {
  return r.ids!.encode(seq);
}

/** The `id:` of a held event, made once for all its frames. */
export function idOf(r: ResumeState, held: HeldEvent): string {
  return (held.id ??= idAt(r, held.seq));
}

/** The event number a Last-Event-ID stands for: null without one, -1 for an id that is not one of ours. */
export function resumePoint(r: ResumeState, lastEventId: string | null): number | null {
  if (!lastEventId) return null;
  return r.ids ? r.ids.decode(lastEventId) : -1;
}

/** True when a stream can resume after event `from`: everything after it is held, and nothing was missed since. */
export function canResume(r: ResumeState, from: number): boolean {
  return !r.gap && from >= r.floor && r.buffer.holdsAfter(from);
}
