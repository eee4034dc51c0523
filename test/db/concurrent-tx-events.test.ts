import { afterEach, expect, test } from "bun:test";
import { inTransaction } from "../../src/transaction.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// Transactions that overlap (on PostgreSQL they really run side by side; on SQLite the second waits
// for the first's lock): each publishes exactly its own change events, and only when it commits.

let t: TestApp | null = null;
afterEach(() => t?.close());

const event = (n: number): ChangeEvent => ({ collection: "c", action: "create", record: { _id: String(n) }, at: n, by: null });

/** A promise and the function that settles it. */
function gate(): [Promise<void>, () => void] {
  let open!: () => void;
  return [new Promise<void>((r) => (open = r)), () => open()];
}

async function overlap(firstFails: boolean, secondFails: boolean): Promise<string[]> {
  t = createTestApp();
  await t.ready;
  const ctx = t.ctx;
  const seen: string[] = [];
  ctx.events.subscribe((e) => seen.push(e.record._id as string));
  const [held, release] = gate();
  const [staged, firstStaged] = gate();
  const first = inTransaction(ctx, async () => {
    ctx.events.stage(event(1));
    firstStaged();
    await held;
    if (firstFails) throw new Error("first rolled back");
  }).catch((e: Error) => e.message);
  await staged;
  const second = inTransaction(ctx, async () => {
    ctx.events.stage(event(2));
    ctx.events.stage(event(3));
    if (secondFails) throw new Error("second rolled back");
  }).catch((e: Error) => e.message);
  // On PostgreSQL the second transaction ends while the first is still open; on SQLite it cannot start before.
  if (onPostgres) await second;
  release();
  await Promise.all([first, second]);
  await inTransaction(ctx, async () => ctx.events.stage(event(4)));
  return seen;
}

test("a transaction that rolls back while another is open publishes nothing, and leaves the other's events alone", async () => {
  expect((await overlap(false, true)).sort()).toEqual(["1", "4"]);
});

test("a transaction that commits while another is open publishes its own events only; the other's rollback drops its own", async () => {
  expect((await overlap(true, false)).sort()).toEqual(["2", "3", "4"]);
});

test("overlapping transactions that both commit publish each event once", async () => {
  expect((await overlap(false, false)).sort()).toEqual(["1", "2", "3", "4"]);
});
