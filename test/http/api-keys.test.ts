import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";

// Password hashing (argon2id) is slow on a loaded machine; these tests hash several times each.
setDefaultTimeout(30_000);

const t = createTestApp();
afterAll(() => t.close());

await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" } });
const createKey = (token: string, name: unknown = "server") => t.req("POST", "/api/v1/auth/api-keys", { token, body: { name } });
const withKey = (method: string, path: string, key: string, body?: unknown) => t.req(method, path, { headers: { "x-api-key": key }, body });

describe("API keys", () => {
  test("create answers 201 with id, name, a baas_ key shown once and created_at in Unix ms; only a hash is stored", async () => {
    const u = await registerUser(t, "keys1@example.test");
    const res = await createKey(u.token, "  deploy bot ");
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), name: "deploy bot", key: expect.stringMatching(/^baas_[A-Za-z0-9_-]{43}$/), created_at: t.clock.now() });
    const rows = await t.db.all<{ key_hash: string }>("SELECT key_hash FROM _api_keys");
    expect(rows.some((r) => r.key_hash.includes(res.body.key.slice(5)))).toBe(false);
    const list = await t.req("GET", "/api/v1/auth/api-keys", { token: u.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [{ id: res.body.id, name: "deploy bot", created_at: res.body.created_at, last_used_at: null }] });
  });

  test("a key acts as its user on the data API and records last_used_at", async () => {
    const u = await registerUser(t, "keys2@example.test");
    const key = (await createKey(u.token)).body.key;
    const created = await withKey("POST", "/api/v1/notes", key, { title: "from a key" });
    expect(created.status).toBe(201);
    expect(created.body._owner_id).toBe(u.id);
    const list = await withKey("GET", "/api/v1/notes", key);
    expect(list.status).toBe(200);
    expect(list.body.items.map((r: { title: string }) => r.title)).toEqual(["from a key"]);
    const keys = await t.req("GET", "/api/v1/auth/api-keys", { token: u.token });
    expect(keys.body.items[0].last_used_at).toBe(t.clock.now());
  });

  test("a key is refused on /auth/* with 401", async () => {
    const u = await registerUser(t, "keys3@example.test");
    const key = (await createKey(u.token)).body.key;
    for (const [m, p] of [["GET", "/api/v1/auth/me"], ["GET", "/api/v1/auth/api-keys"], ["POST", "/api/v1/auth/api-keys"], ["POST", "/api/v1/auth/logout-all"]]) {
      const res = await withKey(m, p, key, m === "POST" ? { name: "x" } : undefined);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("unauthorized");
    }
  });

  test("an unknown or malformed key is 401 on the data API", async () => {
    expect((await withKey("GET", "/api/v1/notes", "baas_nope")).status).toBe(401);
    expect((await withKey("GET", "/api/v1/notes", "garbage")).status).toBe(401);
  });

  test("delete revokes the key at once; another user's key is 404 and keeps working", async () => {
    const a = await registerUser(t, "keys4a@example.test");
    const b = await registerUser(t, "keys4b@example.test");
    const ka = (await createKey(a.token)).body;
    const kb = (await createKey(b.token)).body;
    const foreign = await t.req("DELETE", `/api/v1/auth/api-keys/${kb.id}`, { token: a.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("not_found");
    expect((await withKey("GET", "/api/v1/notes", kb.key)).status).toBe(200);
    const del = await t.req("DELETE", `/api/v1/auth/api-keys/${ka.id}`, { token: a.token });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ ok: true });
    expect((await withKey("GET", "/api/v1/notes", ka.key)).status).toBe(401);
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${ka.id}`, { token: a.token })).status).toBe(404);
    expect((await t.req("GET", "/api/v1/auth/api-keys", { token: a.token })).body).toEqual({ items: [] });
  });

  test("logout-all revokes every session and API key with counts", async () => {
    const u = await registerUser(t, "keys5@example.test");
    const k1 = (await createKey(u.token, "one")).body.key;
    await createKey(u.token, "two");
    const res = await t.req("POST", "/api/v1/auth/logout-all", { token: u.token });
    expect(res.body).toEqual({ ok: true, sessions_revoked: 1, api_keys_revoked: 2 });
    expect((await withKey("GET", "/api/v1/notes", k1)).status).toBe(401);
  });

  test("a user holds at most 100 active keys, also when more are asked at once: then 409 until one is revoked", async () => {
    const u = await registerUser(t, "keys-many@example.test");
    const first = await Promise.all(Array.from({ length: 90 }, (_, i) => createKey(u.token, `k${i}`)));
    expect(first.every((r) => r.status === 201)).toBe(true);
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => createKey(u.token, `m${i}`)));
    expect(more.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of more.filter((r) => r.status !== 201)) expect(r.body).toEqual({ error: "a user has at most 100 active API keys: revoke one before making another", code: "conflict" });
    const list = await t.req("GET", "/api/v1/auth/api-keys", { token: u.token });
    expect(list.body.items).toHaveLength(100);
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${first[0]!.body.id}`, { token: u.token })).status).toBe(200);
    expect((await createKey(u.token, "again")).status).toBe(201);
    expect((await createKey(u.token, "one more")).status).toBe(409);
  });

  test("a missing, empty or too long name is 400; without a token 401", async () => {
    const u = await registerUser(t, "keys6@example.test");
    for (const name of [undefined, "", "   ", 5, "x".repeat(101)]) {
      const res = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: name === undefined ? {} : { name } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
    }
    expect((await t.req("POST", "/api/v1/auth/api-keys", { body: { name: "x" } })).status).toBe(401);
  });

  test("with API keys disabled, creation is 403 method_disabled and existing keys keep working", async () => {
    const u = await registerUser(t, "keys7@example.test");
    const key = (await createKey(u.token)).body.key;
    await t.admin("PATCH", "/api/v1/admin/settings", { auth_api_keys_enabled: false });
    try {
      const res = await createKey(u.token);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: expect.any(String), code: "method_disabled" });
      expect((await withKey("GET", "/api/v1/notes", key)).status).toBe(200);
    } finally {
      await t.admin("PATCH", "/api/v1/admin/settings", { auth_api_keys_enabled: true });
    }
  });
});
