import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ADMIN_SECRET, patchSettings } from "../helpers/app.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// TRUST_PROXY (CONTRACT §8c): behind a reverse proxy every request comes from the proxy's address, so a
// limit per address would be one limit for everyone (10 junk Bearer headers a minute locked the real admin
// out). Requests from a trusted proxy take the client from X-Forwarded-For: the right-most entry that is not
// a trusted proxy. From anyone else the header is ignored. These tests run on a real port: the peer is 127.0.0.1.

setDefaultTimeout(30_000);

let t: LiveApp;
afterEach(() => t?.stop());

const CLIENT_A = "203.0.113.5";
const CLIENT_B = "198.51.100.7";

const get = (path: string, headers: Record<string, string>) => fetch(`${t.base}${path}`, { headers });
const guess = (xff: string | null, value = "not-the-admin-secret-at-all") =>
  get("/api/v1/admin/collections", { authorization: `Bearer ${value}`, ...(xff === null ? {} : { "x-forwarded-for": xff }) });
const guessedFrom = async () => (await t.ctx.db.all<{ ip: string }>("SELECT ip FROM _admin_attempts")).map((r) => r.ip);

describe("without a trusted proxy", () => {
  for (const [name, env] of [["TRUST_PROXY unset", {}], ["a peer outside TRUST_PROXY", { TRUST_PROXY: "10.0.0.0/8, fd00::/8" }]] as const) {
    test(`${name}: a spoofed X-Forwarded-For is ignored, every guess counts against the socket's address`, async () => {
      t = createLiveApp({ env });
      for (let i = 0; i < 10; i++) expect((await guess(`192.0.2.${i}`)).status).toBe(401);
      expect(await guessedFrom()).toEqual(Array(10).fill("127.0.0.1"));
      const limited = await guess("192.0.2.99", ADMIN_SECRET);
      expect(limited.status).toBe(429);
      expect((await limited.json()).code).toBe("rate_limited");
    });
  }
});

describe("behind a trusted proxy", () => {
  test("the right-most untrusted X-Forwarded-For entry is the client: the admin guess limit is per forwarded client", async () => {
    t = createLiveApp({ env: { TRUST_PROXY: "127.0.0.1, ::1, 10.0.0.0/8" } });
    // Client A guesses 10 times through the proxy, naming a different address on the left each time: the
    // proxy appended A's real address on the right, and that is what counts.
    for (let i = 0; i < 10; i++) expect((await guess(`192.0.2.${i}, ${CLIENT_A}`)).status).toBe(401);
    expect(await guessedFrom()).toEqual(Array(10).fill(CLIENT_A));
    expect((await guess(CLIENT_A, ADMIN_SECRET)).status).toBe(429);
    // Through a chain of trusted proxies, A is still A.
    expect((await guess(`${CLIENT_B}, ${CLIENT_A}, 10.1.2.3`, ADMIN_SECRET)).status).toBe(429);
    // The real admin, elsewhere, is not locked out by A; nor is a request with no header (the proxy itself).
    const admin = await guess(CLIENT_B, ADMIN_SECRET);
    expect(admin.status).toBe(200);
    expect((await guess(`${CLIENT_A}, ${CLIENT_B}`, ADMIN_SECRET)).status).toBe(200);
    expect((await guess(null, ADMIN_SECRET)).status).toBe(200);
    // The admin login route counts the same way.
    const login = (xff: string, secret: string) =>
      fetch(`${t.base}/api/v1/admin/login`, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": xff }, body: JSON.stringify({ secret }) });
    expect((await login(CLIENT_A, ADMIN_SECRET)).status).toBe(429);
    expect((await login(CLIENT_B, ADMIN_SECRET)).status).toBe(200);
  });

  test("sessions record the forwarded client's address", async () => {
    t = createLiveApp({ env: { TRUST_PROXY: "127.0.0.1" } });
    const post = (path: string, body: unknown, xff: string) =>
      fetch(`${t.base}/api/v1/auth${path}`, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": xff }, body: JSON.stringify(body) });
    const reg = await (await post("/register", { email: "ip@example.com", password: "password123" }, `6.6.6.6, ${CLIENT_A}`)).json();
    expect((await post("/login", { email: "ip@example.com", password: "password123" }, "2001:DB8:0::9")).status).toBe(200);
    const sessions = await t.admin("GET", `/api/v1/admin/users/${reg.user.id}/sessions`);
    expect(sessions.body.items.map((s: { ip: string }) => s.ip).sort()).toEqual(["2001:db8::9", CLIENT_A]);
  });

  test("realtime streams per address are counted per forwarded client", async () => {
    t = createLiveApp({ env: { TRUST_PROXY: "127.0.0.1" } });
    await patchSettings(t, { realtime_max_streams_per_ip: 1 });
    const a = await t.stream({ headers: { "x-forwarded-for": CLIENT_A } });
    expect(a.response.status).toBe(200);
    const again = await t.stream({ headers: { "x-forwarded-for": `${CLIENT_B}, ${CLIENT_A}` } });
    expect(again.response.status).toBe(429);
    const b = await t.stream({ headers: { "x-forwarded-for": CLIENT_B } });
    expect(b.response.status).toBe(200);
  });
});
