import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { HASHES_AT_ONCE, WAITING_PER_ADDRESS } from "../../src/users/hash-turns.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// Password hashes take turns (docs/API.md, "Password hashing"): an anonymous client sending logins with
// any emails as fast as it can must not keep every core hashing, must not make another address's login
// wait for its whole flood, and what it sends past the waiting limit is refused before anything is hashed
// or counted. A real port behind a trusted proxy, so each request names its client address.

setDefaultTimeout(120_000);

let t: LiveApp;
afterEach(() => t?.stop());

const FLOODER = "203.0.113.5";
const OTHER = "198.51.100.7";

function login(email: string, from: string): Promise<Response> {
  return fetch(`${t.base}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": from },
    body: JSON.stringify({ email, password: "a wrong password" }),
  });
}

test("a login flood from one address: past the waiting limit 429 rate_limited, uncounted; another address's login is not queued behind it", async () => {
  // One wrong guess locks an email: whether a refused request's guess was counted shows in the next login.
  t = createLiveApp({ env: { TRUST_PROXY: "127.0.0.1", LOCKOUT_MAX_ATTEMPTS: "1" } });
  const flood = WAITING_PER_ADDRESS + HASHES_AT_ONCE + 24;
  const finished: string[] = [];
  const sent = Array.from({ length: flood }, (_, i) =>
    login(`flood${i}@example.com`, FLOODER).then(async (res) => {
      finished.push(`flood${i}`);
      return { i, status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
    }),
  );
  // The flood waits for its turns; a login from elsewhere, sent after it, takes the next free turn.
  await Bun.sleep(300);
  const other = await login("someone@example.com", OTHER);
  finished.push("other");
  expect(other.status).toBe(401);
  const answers = await Promise.all(sent);

  const refused = answers.filter((a) => a.status === 429);
  const checked = answers.filter((a) => a.status === 401);
  expect(refused.length + checked.length).toBe(flood);
  // Every request that arrived while WAITING_PER_ADDRESS of the flood waited was refused: at least the
  // ones past the limit, unless hashes finished while the flood was still arriving.
  expect(refused.length).toBeGreaterThan(0);
  expect(checked.length).toBeGreaterThanOrEqual(WAITING_PER_ADDRESS + HASHES_AT_ONCE);
  for (const a of refused) {
    expect(a.body.code).toBe("rate_limited");
    expect(a.retryAfter).toBe("1");
  }
  for (const a of checked) expect(a.body.code).toBe("invalid_credentials");
  // The other address was served after a few of the flood's hashes, not after all of them (in arrival
  // order it would have been the last).
  expect(finished.indexOf("other")).toBeLessThan(refused.length + 2 * HASHES_AT_ONCE + 4);

  // A refused guess was never tried: its email is not locked. A checked one locked its email.
  const again = await login(`flood${refused[0]!.i}@example.com`, OTHER);
  expect(again.status).toBe(401);
  const locked = await login(`flood${checked[0]!.i}@example.com`, OTHER);
  expect(locked.status).toBe(429);
  expect((await locked.json()).code).toBe("account_locked");
});

test("many registrations of a taken email at once are each 409 conflict: a taken address costs no hashing turn", async () => {
  t = createLiveApp({ env: { TRUST_PROXY: "127.0.0.1" } });
  const register = (email: string) =>
    fetch(`${t.base}/api/v1/auth/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": FLOODER },
      body: JSON.stringify({ email, password: "a good long password" }),
    });
  expect((await register("taken@example.com")).status).toBe(201);
  const n = WAITING_PER_ADDRESS + HASHES_AT_ONCE + 24;
  const answers = await Promise.all(Array.from({ length: n }, async () => (await register("taken@example.com")).status));
  expect(answers.filter((s) => s !== 409)).toEqual([]);
});
