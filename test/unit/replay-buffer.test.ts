import { expect, test } from "bun:test";
import { MAX_HELD_BYTES, MIN_HELD, REF_RECORD_BYTES, ReplayBuffer } from "../../src/realtime/replay.ts";

// The replay buffer behind Last-Event-ID (CONTRACT §10: at least the last 1,000 events or 5 minutes; §8c: bounded in
// bytes). Records of 40 KB: 1,200 of them pass the byte bound, yet every one of the last 1,000 stays replayable, the
// older of them by reference (the client reads the record), and the memory held stays under the bound.
const event = (i: number, bytes: number) => ({ collection: "posts", action: "create" as const, record: { _id: `r${i}`, _owner_id: "u1", body: "x".repeat(bytes) }, at: i, by: null });

test("past the byte bound, the last 1,000 events stay replayable: the older ones by reference, oldest first", () => {
  const buffer = new ReplayBuffer();
  const size = 40_000;
  for (let i = 1; i <= 1_200; i++) buffer.push(event(i, size), 0, null);
  expect(buffer.bytes).toBeLessThanOrEqual(MAX_HELD_BYTES);
  // Every event after the 200th is held: a resume from there misses nothing.
  expect(buffer.holdsAfter(1_200 - MIN_HELD)).toBe(true);
  const held = buffer.after(1_200 - MIN_HELD);
  expect(held.map((h) => h.seq)).toEqual(Array.from({ length: MIN_HELD }, (_, i) => 1_200 - MIN_HELD + 1 + i));
  // References first (oldest), whole records after: the newest ones are whole.
  const refs = held.filter((h) => h.ref).length;
  expect(refs).toBeGreaterThan(0);
  expect(held.slice(0, refs).every((h) => h.ref && Object.keys(h.event.record).sort().join() === "_id,_owner_id")).toBe(true);
  expect(held.slice(refs).every((h) => !h.ref && (h.event.record.body as string).length === size)).toBe(true);
  expect(held.at(-1)!.event.record._id).toBe("r1200");
});

test("within the byte bound nothing changes: whole records, and those over REF_RECORD_BYTES by reference from the start", () => {
  const buffer = new ReplayBuffer();
  buffer.push(event(1, 100), 0, null);
  buffer.push(event(2, REF_RECORD_BYTES + 1), 0, null);
  buffer.push(event(3, 100), 0, null);
  expect(buffer.after(0).map((h) => h.ref)).toEqual([false, true, false]);
});
