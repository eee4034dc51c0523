import { afterAll, describe, expect, test } from "bun:test";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { sharedRead } from "../../src/db/shared-read.ts";
import { keptCheck } from "../../src/auth/kept-checks.ts";
import { sessionIdOf } from "../helpers/fixtures.ts";

// A session's or an API key's check is kept between requests while nothing that decides it changed; every change
// that does (a revocation, a role, a user's deletion), made by this server, by direct SQL or by another node on the
// same database, holds from the next request on.

const t = createTestApp();
afterAll(() => t.close());
// Read by several tests (which run in any order).
await t.admin("POST", "/api/v1/admin/collections", { name: "kept_keys", rules: { read: "authenticated", create: "authenticated" } });


/** Runs `fn` on a second server on the same database (another node, the CLI), closed after. */
async function elsewhere(fn: (other: TestApp) => Promise<void>): Promise<void> {
  const other = createTestApp({ dir: t.dir });
  try {
    await fn(other);
  } finally {
    await other.close();
  }
}

describe("session checks kept between requests", () => {
  test("a session revoked by another server is refused at its next request here", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "kept_revoke", rules: { read: "authenticated" } });
    const u = await registerUser(t, "kept-revoke@example.com");
    for (let i = 0; i < 3; i++) expect((await t.req("GET", "/api/v1/kept_revoke", { token: u.token })).status).toBe(200);
    await elsewhere(async (other) => {
      expect((await other.admin("DELETE", `/api/v1/admin/users/${u.id}/sessions`)).status).toBe(200);
    });
    const res = await t.req("GET", "/api/v1/kept_revoke", { token: u.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "unauthorized", error: "session revoked or expired" });
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).status).toBe(401);
  });

  test("a session revoked, or its row deleted, by direct SQL is refused at the next request", async () => {
    const a = await registerUser(t, "kept-sql-a@example.com");
    const b = await registerUser(t, "kept-sql-b@example.com");
    expect((await t.req("GET", "/api/v1/auth/me", { token: a.token })).status).toBe(200);
    expect((await t.req("GET", "/api/v1/auth/me", { token: b.token })).status).toBe(200);
    await t.db.run("UPDATE _sessions SET revoked_at = ? WHERE id = ?", [t.clock.now(), sessionIdOf(a.token)]);
    expect((await t.req("GET", "/api/v1/auth/me", { token: a.token })).status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/me", { token: b.token })).status).toBe(200);
    await t.db.run("DELETE FROM _refresh_tokens WHERE session_id = ?", [sessionIdOf(b.token)]);
    await t.db.run("DELETE FROM _sessions WHERE id = ?", [sessionIdOf(b.token)]);
    expect((await t.req("GET", "/api/v1/auth/me", { token: b.token })).status).toBe(401);
  });

  test("roles changed by another server decide the next request here; a deleted user's token is refused", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "kept_roles", rules: { read: "@auth.roles ?= 'staff'" } });
    const u = await registerUser(t, "kept-roles@example.com");
    expect((await t.req("GET", "/api/v1/kept_roles", { token: u.token })).status).toBe(403);
    await elsewhere(async (other) => {
      expect((await other.admin("PATCH", `/api/v1/admin/users/${u.id}`, { roles: ["staff"] })).status).toBe(200);
    });
    expect((await t.req("GET", "/api/v1/kept_roles", { token: u.token })).status).toBe(200);
    expect((await t.req("GET", "/api/v1/auth/me", { token: u.token })).body.roles).toEqual(["staff"]);
    await elsewhere(async (other) => {
      expect((await other.admin("DELETE", `/api/v1/admin/users/${u.id}`)).status).toBe(200);
    });
    expect((await t.req("GET", "/api/v1/kept_roles", { token: u.token })).status).toBe(401);
  });

  test("requests sent together after a revocation all fail; those sent before it was committed all pass", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "kept_burst", rules: { create: "authenticated" } });
    const u = await registerUser(t, "kept-burst@example.com");
    const burst = () => Promise.all(Array.from({ length: 40 }, (_, i) => t.req("POST", "/api/v1/kept_burst", { token: u.token, body: { i } })));
    expect((await burst()).map((r) => r.status)).toEqual(Array(40).fill(201));
    await elsewhere(async (other) => {
      expect((await other.req("POST", "/api/v1/auth/logout", { token: u.token })).status).toBe(200);
    });
    expect((await burst()).map((r) => r.status)).toEqual(Array(40).fill(401));
    expect((await t.admin("GET", "/api/v1/kept_burst?limit=100")).body.total).toBe(40);
  });
});

describe("the numbers a kept check stands on", () => {
  const meta = async (key: string) => (await t.db.get<{ value: string }>("SELECT value FROM _meta WHERE key = ?", [key]))?.value ?? "0";
  const both = async () => [await meta("users_access_version"), await meta("credentials_version")];

  test("a sign-out or a revoked key moves the credentials' number only; a role change moves the users' access number only", async () => {
    const u = await registerUser(t, "kept-numbers@example.com");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "n" } });
    expect(key.status).toBe(201);
    const [access0, creds0] = await both();
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${key.body.id}`, { token: u.token })).status).toBe(200);
    const [access1, creds1] = await both();
    expect(access1).toBe(access0);
    expect(Number(creds1)).toBeGreaterThan(Number(creds0));
    expect((await t.req("POST", "/api/v1/auth/logout", { token: u.token })).status).toBe(200);
    const [access2, creds2] = await both();
    expect(access2).toBe(access0);
    expect(Number(creds2)).toBeGreaterThan(Number(creds1));
    // Realtime keeps the users' roles while the users' access number stands: a sign-out does not make it read them again.
    expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { roles: ["staff"] })).status).toBe(200);
    const [access3, creds3] = await both();
    expect(Number(access3)).toBeGreaterThan(Number(access0));
    expect(creds3).toBe(creds2);
  });
});

describe("API key checks kept between requests", () => {
  const withKey = (method: string, path: string, key: string, body?: unknown) => t.req(method, path, { headers: { "x-api-key": key }, body });
  const newKey = async (email: string) => {
    const u = await registerUser(t, email);
    const res = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "script" } });
    expect(res.status).toBe(201);
    return { user: u, id: res.body.id as string, key: res.body.key as string };
  };

  test("a key revoked by another server is refused at its next use here", async () => {
    const k = await newKey("kept-key-revoke@example.com");
    for (let i = 0; i < 3; i++) expect((await withKey("GET", "/api/v1/kept_keys", k.key)).status).toBe(200);
    await elsewhere(async (other) => {
      expect((await other.req("DELETE", `/api/v1/auth/api-keys/${k.id}`, { token: k.user.token })).status).toBe(200);
    });
    const res = await withKey("GET", "/api/v1/kept_keys", k.key);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "unauthorized", error: "invalid API key" });
  });

  test("a key revoked or deleted by direct SQL is refused at its next use; another key goes on", async () => {
    const a = await newKey("kept-key-sql-a@example.com");
    const b = await newKey("kept-key-sql-b@example.com");
    const c = await newKey("kept-key-sql-c@example.com");
    for (const k of [a, b, c]) expect((await withKey("GET", "/api/v1/kept_keys", k.key)).status).toBe(200);
    await t.db.run("UPDATE _api_keys SET revoked_at = ? WHERE id = ?", [t.clock.now(), a.id]);
    expect((await withKey("GET", "/api/v1/kept_keys", a.key)).status).toBe(401);
    await t.db.run("DELETE FROM _api_keys WHERE id = ?", [b.id]);
    expect((await withKey("GET", "/api/v1/kept_keys", b.key)).status).toBe(401);
    expect((await withKey("GET", "/api/v1/kept_keys", c.key)).status).toBe(200);
  });

  test("a key's user made staff elsewhere reads as staff at the next use; deleted, the key is refused", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "kept_key_roles", rules: { read: "@auth.roles ?= 'staff'" } });
    const k = await newKey("kept-key-roles@example.com");
    expect((await withKey("GET", "/api/v1/kept_key_roles", k.key)).status).toBe(403);
    await elsewhere(async (other) => {
      expect((await other.admin("PATCH", `/api/v1/admin/users/${k.user.id}`, { roles: ["staff"] })).status).toBe(200);
    });
    expect((await withKey("GET", "/api/v1/kept_key_roles", k.key)).status).toBe(200);
    await elsewhere(async (other) => {
      expect((await other.admin("DELETE", `/api/v1/admin/users/${k.user.id}`)).status).toBe(200);
    });
    expect((await withKey("GET", "/api/v1/kept_key_roles", k.key)).status).toBe(401);
  });

  test("a key used for a minute and more is marked used again", async () => {
    const k = await newKey("kept-key-used@example.com");
    expect((await withKey("GET", "/api/v1/kept_keys", k.key)).status).toBe(200);
    const first = t.clock.now();
    t.clock.advance(61_000);
    expect((await withKey("GET", "/api/v1/kept_keys", k.key)).status).toBe(200);
    t.clock.advance(10_000);
    expect((await withKey("GET", "/api/v1/kept_keys", k.key)).status).toBe(200);
    const keys = await t.req("GET", "/api/v1/auth/api-keys", { token: k.user.token });
    expect(keys.body.items[0].last_used_at).toBe(first + 61_000);
  });
});

describe("keptCheck", () => {
  test("keeps a row until the version moves; a large row is read every time; the text kept in all is bounded", async () => {
    let reads = 0;
    const reader = (row: object) => async () => {
      reads++;
      return { ...row };
    };
    const small = reader({ user_id: "u1", metadata: "{}" });
    const first = await keptCheck(t.ctx, "test\u0000a", small);
    expect(await keptCheck(t.ctx, "test\u0000a", small)).toBe(first!);
    expect(reads).toBe(1);
    // A user's 64 KiB of metadata is not kept (the sessions of one user would each hold a copy).
    const large = reader({ user_id: "u2", metadata: JSON.stringify({ blob: "x".repeat(60_000) }) });
    for (let i = 0; i < 3; i++) await keptCheck(t.ctx, "test\u0000big", large);
    expect(reads).toBe(4);
    // Rows of 3,000 characters: past 4 Mi characters kept in all the cache starts again (so "a" is read again).
    const mid = reader({ metadata: "y".repeat(3000) });
    for (let i = 0; i < 1500; i++) await keptCheck(t.ctx, `test\u0000m${i}`, mid);
    expect(reads).toBe(1504);
    await keptCheck(t.ctx, "test\u0000a", small);
    expect(reads).toBe(1505);
    // The version moves (any change of access, here a role): everything is read again.
    const u = await registerUser(t, "kept-unit@example.com");
    await keptCheck(t.ctx, "test\u0000a", small);
    expect(reads).toBe(1505);
    await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { roles: ["staff"] });
    await keptCheck(t.ctx, "test\u0000a", small);
    expect(reads).toBe(1506);
  });
});

describe("sharedRead", () => {
  test("callers share a read begun after each of them asked; one read runs at a time", async () => {
    const begun: number[] = [];
    let asked = 0;
    let running = 0;
    let most = 0;
    const read = sharedRead(async () => {
      const seen = asked;
      running++;
      most = Math.max(most, running);
      begun.push(seen);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return seen;
    });
    const ask = () => {
      asked++;
      return read();
    };
    // Three callers in one turn share one read, begun after all three asked.
    const first = await Promise.all([ask(), ask(), ask()]);
    expect(first).toEqual([3, 3, 3]);
    // A caller that asks while a read runs gets the next one, begun after that one ended.
    const running1 = ask();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const during = [ask(), ask()];
    expect(await running1).toBe(4);
    expect(await Promise.all(during)).toEqual([6, 6]);
    expect(begun).toEqual([3, 4, 6]);
    expect(most).toBe(1);
  });

  test("a failed read fails its callers only; the next callers read again", async () => {
    let n = 0;
    const read = sharedRead(async () => {
      if (++n === 1) throw new Error("gone");
      return n;
    });
    const failed = await Promise.allSettled([read(), read()]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(await read()).toBe(2);
  });
});
