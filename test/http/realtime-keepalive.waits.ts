import { afterEach, describe, expect, test } from "bun:test";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// A test that spends its time waiting on the clock. Files named `*.waits.ts` are not picked up by a plain
// `bun test`: `npm test` runs them on each engine in processes of their own beside the suites (scripts/test.ts),
// so their waits add nothing to the suites' time. By hand: `npx bun test ./test/http/realtime-keepalive.waits.ts`.

let t: LiveApp;
afterEach(() => t.stop());

describe("keep-alive (CONTRACT §10)", () => {
  test("an idle stream gets a `: ping` comment line after 25 s, and stays open", async () => {
    t = createLiveApp();
    const s = await t.stream();
    await s.clientId();
    const opened = Date.now();
    // Polls with a deadline; the interval itself is the contract's 25 s.
    const deadline = opened + 35_000;
    while (!s.comments.includes("ping") && Date.now() < deadline) await Bun.sleep(100);
    expect(s.comments).toContain("ping");
    expect(Date.now() - opened).toBeGreaterThanOrEqual(24_000);
    expect(s.ended).toBe(false);
    expect(s.messages.map((m) => m.event)).toEqual(["connect"]);
  }, 45_000);
});
