import { expect, test } from "bun:test";
import { HASHES_AT_ONCE, WAITING_PER_ADDRESS, inHashTurn } from "../../src/users/hash-turns.ts";

// The turns of password hashes (docs/API.md, "Password hashing"), with hashes that end when the test says: an
// IPv6 address counts by its /64 network, so a host cannot pass the waiting limit by changing the low bits;
// another network waits apart.

test("an IPv6 /64 is one address for the waiting limit; another /64 is not held by it", async () => {
  const ends: (() => void)[] = [];
  const hash = () => new Promise<void>((resolve) => ends.push(resolve));
  const outcome = (p: Promise<unknown>) => p.then(() => "done", (err) => (err as { code?: string }).code ?? String(err));
  const flood = Array.from({ length: HASHES_AT_ONCE + WAITING_PER_ADDRESS + 5 }, (_, i) => outcome(inHashTurn(`2001:db8:1:2::${(i + 1).toString(16)}`, hash)));
  const other = outcome(inHashTurn("2001:db8:1:3::1", hash));
  // Wake every hash as it starts, until all that got a turn or a place have run.
  for (let spins = 0; spins < 10_000 && ends.length < HASHES_AT_ONCE + WAITING_PER_ADDRESS + 1; spins++) {
    const end = ends.shift();
    if (end) end();
    await Bun.sleep(0);
  }
  while (ends.length) {
    ends.shift()!();
    await Bun.sleep(0);
  }
  const results = await Promise.all(flood);
  expect(results.filter((r) => r === "rate_limited")).toHaveLength(5);
  expect(results.filter((r) => r === "done")).toHaveLength(HASHES_AT_ONCE + WAITING_PER_ADDRESS);
  expect(await other).toBe("done");
});

test("a request whose client went away while it waited is not hashed, and its turn passes on", async () => {
  const ends: (() => void)[] = [];
  const holding = Array.from({ length: HASHES_AT_ONCE }, (_, i) => inHashTurn(`198.51.100.${i + 1}`, () => new Promise<void>((resolve) => ends.push(resolve))));
  let hashedGone = false;
  const left = new AbortController();
  const leaving = inHashTurn("203.0.113.9", async () => void (hashedGone = true), left.signal).then(
    () => "hashed",
    (err) => (err as Error).message,
  );
  const staying = inHashTurn("203.0.113.10", async () => "hashed");
  left.abort();
  for (const end of ends) end();
  await Promise.all(holding);
  expect(await leaving).toBe("the client went away before its password check");
  expect(hashedGone).toBe(false);
  expect(await staying).toBe("hashed");
});
