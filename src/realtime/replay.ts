import type { ChangeEvent } from "../events/bus.ts";
import { recordBytes } from "../query/rows.ts";

/** A committed change as the realtime layer holds it: numbered in commit order. */
export interface HeldEvent {
  seq: number;
  /** Unix ms (the context's clock) when it was received. */
  heldAt: number;
  /** The change; for a record larger than REF_RECORD_BYTES, with a record of `_id` and `_owner_id` only. */
  event: ChangeEvent;
  /** True when only the record's id is held: replayed as a reference (the client reads the record). */
  ref: boolean;
  /** What the held record takes, estimated (recordBytes). */
  bytes: number;
  /** The collection's `createdAt` when the change was committed (null: not known yet): a collection dropped and made again is another one. */
  generation: number | null;
  /** Its event id, once made. */
  id?: string;
  /**
   * An event without a number of its own (a node of an earlier version sent it, see relay.ts): delivered to every
   * stream whatever it got before, under the id of the last numbered event, and never held.
   */
  unnumbered?: true;
  /** With events numbered by the database: this process's own event, counted so at its commit (see OwnEvents in hub.ts). */
  own?: number;
}

/** Events are held at least this long, and at least the last MIN_HELD of them... */
export const HOLD_MS = 5 * 60_000;
export const MIN_HELD = 1_000;
/**
 * ...but never more than this many, nor records of more than MAX_HELD_BYTES in all (memory stays bounded under any
 * write rate): past the bytes, older events go beyond the last MIN_HELD, and within them records are held by
 * reference instead, oldest first.
 */
export const MAX_HELD = 20_000;
export const MAX_HELD_BYTES = 32 * 1024 * 1024;
/** A record larger than this goes out as a reference (its `_id`, the client reads it) and is held as one. */
export const REF_RECORD_BYTES = 1024 * 1024;

/** The record a reference holds: what read rules look at (`_owner_id`) and the id the client reads. */
const refRecord = (record: Record<string, unknown>) => ({ _id: record._id, _owner_id: record._owner_id ?? null });
/** What a held reference takes, estimated. */
const REF_BYTES = 64;

/** Holds a held event's record by reference from now on (replayed as one: the client reads the record). */
function holdByReference(held: HeldEvent): void {
  held.event = { ...held.event, record: refRecord(held.event.record) };
  held.ref = true;
  held.bytes = REF_BYTES;
}

/** An event as held, numbered `seq` (a large record by reference), whether or not a buffer keeps it. */
export function heldEvent(event: ChangeEvent, now: number, generation: number | null, seq: number): HeldEvent {
  const size = recordBytes(event.record);
  const ref = size > REF_RECORD_BYTES && event.action !== "hard_delete";
  // The record before the change (`previous`) is not held: no event sends it.
  const kept: ChangeEvent = { collection: event.collection, action: event.action, record: ref ? refRecord(event.record) : event.record, at: event.at, by: event.by };
  return { seq, heldAt: now, event: kept, ref, bytes: ref ? REF_BYTES : size, generation };
}

/** The replay buffer behind `Last-Event-ID`: the recent events, oldest first, numbered upwards. */
export class ReplayBuffer {
  // Dropped entries at the front are nulled at once (their records freed), and cut off now and then.
  private items: (HeldEvent | null)[] = [];
  private head = 0;
  /** Estimated bytes of the records held. */
  bytes = 0;
  /** Number of the last event received (0 before the first). */
  lastSeq = 0;
  /** The entries from `head` up to this index hold references only (see push). */
  private whole = 0;

  /**
   * Numbers (`seq`, by default the next number) and keeps an event (a large record by reference), dropping what is
   * beyond MAX_HELD, or beyond MIN_HELD and older than HOLD_MS or past MAX_HELD_BYTES. Within the last MIN_HELD,
   * records past MAX_HELD_BYTES are held by reference instead, oldest first: a resume still gets every one of them
   * (CONTRACT §10: at least the last 1,000), the records of the older ones read by the client.
   */
  push(event: ChangeEvent, now: number, generation: number | null, seq = this.lastSeq + 1): HeldEvent {
    const held = heldEvent(event, now, generation, seq);
    this.lastSeq = seq;
    this.items.push(held);
    this.bytes += held.bytes;
    while (this.size > MAX_HELD || (this.size > MIN_HELD && (this.bytes > MAX_HELD_BYTES || this.items[this.head]!.heldAt < now - HOLD_MS))) {
      this.bytes -= this.items[this.head]!.bytes;
      this.items[this.head++] = null;
    }
    if (this.whole < this.head) this.whole = this.head;
    while (this.bytes > MAX_HELD_BYTES && this.whole < this.items.length) {
      const old = this.items[this.whole++]!;
      if (old.ref || old.event.action === "hard_delete") continue;
      this.bytes -= old.bytes - REF_BYTES;
      holdByReference(old);
    }
    // Compact now and then, so dropped entries do not pile up at the front of the array.
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.whole -= this.head;
      this.head = 0;
    }
    return held;
  }

  /** Numbers an event without keeping it (nobody could ask for it again); `seq`, its number, when it has one already. */
  skip(seq = this.lastSeq + 1): void {
    this.lastSeq = seq;
  }

  get size(): number {
    return this.items.length - this.head;
  }

  /** True when every event after `seq` is still held (so a resume from it misses nothing). */
  holdsAfter(seq: number): boolean {
    if (seq > this.lastSeq || seq < 0) return false;
    const first = this.size ? this.items[this.head]!.seq : this.lastSeq + 1;
    return seq >= first - 1;
  }

  /** The held events after `seq`, oldest first. */
  after(seq: number): HeldEvent[] {
    const out: HeldEvent[] = [];
    for (let i = this.items.length - 1; i >= this.head && this.items[i]!.seq > seq; i--) out.push(this.items[i]!);
    return out.reverse();
  }
}
