import { afterEach, expect, test } from "bun:test";
import { inTransaction } from "../../src/transaction.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// Change events of a transaction that waited for another one's lock and then rolled back never go
// out, whatever the other transaction staged meanwhile.

let t: TestApp | null = null;
afterEach(() => t?.close());

const event = (n: number): ChangeEvent => ({ collection: "c", action: "create", record: { _id: String(n) }, at: n, by: null });

test("a transaction that waited for the lock and rolled back publishes nothing, now or with the next commit", async () => {
  t = createTestApp();
  await t.ready;
  const ctx = t.ctx;
  const seen: string[] = [];
  ctx.events.subscribe((e) => seen.push(e.record._id as string));

  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const first = inTransaction(ctx, async () => {
    ctx.events.stage(event(1));
    await held;
  });
  const second = inTransaction(ctx, async () => {
    ctx.events.stage(event(2));
    ctx.events.stage(event(3));
    throw new Error("rolled back");
  }).catch((e: Error) => e.message);
  release();
  await first;
  expect(await second).toBe("rolled back");
  await inTransaction(ctx, async () => ctx.events.stage(event(4)));
  expect(seen).toEqual(["1", "4"]);
});
