import { describe, expect, test } from "bun:test";
import { ADMIN_SECRET, appPerTest, createCollection, createTestApp, registerUser } from "../helpers/app.ts";

// A client sends the same access token with every request. However often it has been accepted before,
// each request still checks its expiry, its session and its exact bytes.
const t = appPerTest((t) => createCollection(t, "notes", { read: "authenticated", create: "authenticated" }));

const me = (token: string, app = t) => app.req("GET", "/api/v1/auth/me", { token });
const create = (token: string) => t.req("POST", "/api/v1/notes", { token, body: { text: "hi" } });

describe("an access token used again and again", () => {
  test("is refused once it expires, however often it was accepted", async () => {
    const user = await registerUser(t, "reuse@example.com");
    for (let i = 0; i < 3; i++) expect((await create(user.token)).status).toBe(201);
    t.clock.advance(899_000);
    expect((await me(user.token)).status).toBe(200);
    t.clock.advance(2_000);
    const res = await me(user.token);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
    expect((await create(user.token)).status).toBe(401);
  });

  test("is refused at the next request once its session is revoked, also among requests sent together", async () => {
    const user = await registerUser(t, "revoke@example.com");
    const before = await Promise.all(Array.from({ length: 8 }, () => create(user.token)));
    expect(before.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect((await t.req("POST", "/api/v1/auth/logout", { token: user.token, body: {} })).status).toBeLessThan(300);
    const after = await Promise.all(Array.from({ length: 8 }, () => create(user.token)));
    expect(after.map((r) => r.status)).toEqual(Array(8).fill(401));
  });

  test("a copy with any other signature is refused, before and after the real one was accepted", async () => {
    const user = await registerUser(t, "forge@example.com");
    const [head, body, sig] = user.token.split(".");
    // Every copy differs from the real signature (one ending in "AA" would be the real one: 1 token in 4,096).
    const forged = [`${head}.${body}.${sig.slice(0, -2)}${sig.endsWith("AA") ? "BB" : "AA"}`, `${head}.${body}.${sig}A`, `${head}.${body}.`, `${head}.${body}`];
    for (const f of forged) expect((await me(f)).status).toBe(401);
    expect((await me(user.token)).status).toBe(200);
    for (const f of forged) expect((await me(f)).status).toBe(401);
  });

  test("a token of one server is refused by another with its own key, even after the first accepted it", async () => {
    // An admin token names no session, so only its signature tells the two servers apart.
    const login = await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    expect(login.status).toBe(200);
    const token: string = login.body.token;
    const asAdmin = (app: typeof t) => app.req("GET", "/api/v1/admin/collections", { token });
    expect((await asAdmin(t)).status).toBe(200);
    const other = createTestApp();
    try {
      expect((await asAdmin(other)).status).toBe(401);
      expect((await asAdmin(t)).status).toBe(200);
      expect((await asAdmin(other)).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});
