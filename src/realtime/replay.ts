import type { ChangeEvent } from "../events/bus.ts";

/** A committed change as the realtime layer holds it: numbered in commit order. */
export interface HeldEvent {
  seq: number;
  /** Unix ms (the context's clock) when it was received. */
  heldAt: number;
  event: ChangeEvent;
}

/** Events are held at least this long, and at least the last MIN_HELD of them... */
export const HOLD_MS = 5 * 60_000;
export const MIN_HELD = 1_000;
/** ...but never more than this many (memory stays bounded under any write rate). */
export const MAX_HELD = 20_000;

/** The replay buffer behind `Last-Event-ID`: the recent events, oldest first. */
export class ReplayBuffer {
  private items: HeldEvent[] = [];
  private head = 0;
  /** Number of the last event received (0 before the first). */
  lastSeq = 0;

  /** Numbers and keeps an event, dropping what is both beyond MIN_HELD and older than HOLD_MS (or beyond MAX_HELD). */
  push(event: ChangeEvent, now: number): HeldEvent {
    const held = { seq: ++this.lastSeq, heldAt: now, event };
    this.items.push(held);
    while (this.size > MAX_HELD || (this.size > MIN_HELD && this.items[this.head].heldAt < now - HOLD_MS)) this.head++;
    // Compact now and then, so dropped entries do not pile up at the front of the array.
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return held;
  }

  /** Numbers an event without keeping it (nobody could ask for it again). */
  skip(): void {
    this.lastSeq++;
  }

  get size(): number {
    return this.items.length - this.head;
  }

  /** True when every event after `seq` is still held (so a resume from it misses nothing). */
  holdsAfter(seq: number): boolean {
    if (seq > this.lastSeq || seq < 0) return false;
    const first = this.size ? this.items[this.head].seq : this.lastSeq + 1;
    return seq >= first - 1;
  }

  /** The held events after `seq`, oldest first. */
  after(seq: number): HeldEvent[] {
    const out: HeldEvent[] = [];
    for (let i = this.items.length - 1; i >= this.head && this.items[i].seq > seq; i--) out.push(this.items[i]);
    return out.reverse();
  }
}
