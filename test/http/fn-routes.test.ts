import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HookLoadError, loadHooks } from "../../src/hooks/load.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// Routes of hook files (CONTRACT §15), loaded from disk as `baas serve` loads them.
const dirs: string[] = [];
function hooksDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "baas-fn-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const SECRET = "whsec_test_0123456789";

const shop = `
import { createHmac, timingSafeEqual } from "node:crypto";
const SECRET = ${JSON.stringify(SECRET)};
export const routes = [
  { method: "GET", path: "/hello/:name", handler: ({ params, query, auth }) => ({ hello: params.name, query, auth }) },
  { method: "GET", path: "/orders/stats", handler: () => ({ stats: true }) },
  { method: "get", path: "/orders/:id", handler: ({ params }) => ({ order: params.id }) },
  { method: "POST", path: "/echo", handler: ({ body, rawBody, request }) => ({ body: body ?? null, rawBody, type: request.headers.get("content-type") }) },
  { method: "POST", path: "/nothing", handler: () => undefined },
  { method: "GET", path: "/teapot", handler: () => new Response("short and stout", { status: 418, headers: { "x-kind": "teapot" } }) },
  { method: "GET", path: "/conflict", handler: () => { throw { status: 409, message: "already paid" }; } },
  { method: "GET", path: "/coded", handler: () => { const e = new Error("card declined"); e.status = 402; e.code = "card_declined"; throw e; } },
  { method: "GET", path: "/invalid", handler: () => { throw { status: 422, message: "qty too high", errors: [{ field: "qty", rule: "max", message: "at most 5" }] }; } },
  { method: "GET", path: "/crash", handler: ({ rawBody }) => { throw new Error("boom in handler"); } },
  { method: "POST", path: "/crash-after-write", handler: async ({ tx }) => { await tx.create("orders", { item: "ghost", status: "new" }); throw new Error("after the write"); } },
  { method: "POST", path: "/refuse-after-write", handler: async ({ tx }) => { await tx.create("orders", { item: "ghost", status: "new" }); throw { status: 400, message: "changed my mind" }; } },
  { method: "POST", path: "/bigint", handler: async ({ tx }) => { await tx.create("orders", { item: "big", status: "new" }); return { n: 1n }; } },
  {
    method: "POST",
    path: "/payments/webhook",
    handler: async ({ request, rawBody, body, tx }) => {
      const sig = request.headers.get("x-signature") ?? "";
      const want = createHmac("sha256", SECRET).update(rawBody).digest("hex");
      if (sig.length !== want.length || !timingSafeEqual(Buffer.from(sig), Buffer.from(want))) {
        const e = new Error("bad signature"); e.status = 401; e.code = "invalid_signature"; throw e;
      }
      const order = await tx.get("orders", body.order_id);
      if (!order) throw { status: 404, message: "no such order" };
      if (order.status === "paid") return { ok: true, already: true };
      const paid = await tx.update("orders", order._id, { status: "paid", paid_amount: body.amount });
      await tx.create("payments", { order: order._id, amount: body.amount });
      return { ok: true, status: paid.status };
    },
  },
];
`;

let t: TestApp;
let dir: string;
const events: ChangeEvent[] = [];
beforeAll(async () => {
  dir = hooksDir({ "shop.ts": shop, "hooks.ts": `export default { collection: "orders", beforeCreate(e) { e.data.touched = true; } };\n` });
  const hooks = await loadHooks(dir);
  t = createTestApp({ context: { hooks } });
  await createCollection(t, "orders");
  await createCollection(t, "payments");
  t.ctx.events.subscribe((e) => events.push(e));
}, 60_000); // a throwaway PostgreSQL cluster may take a while to start on a busy machine
afterAll(() => t.close());

describe("serving routes", () => {
  test("params, query and an anonymous caller", async () => {
    const res = await t.req("GET", "/api/v1/fn/hello/w%C3%B6rld?a=1&b=x&a=2");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ hello: "wörld", query: { a: "2", b: "x" }, auth: null });
    // One trailing slash is the same path.
    expect((await t.req("GET", "/api/v1/fn/hello/x/")).body.hello).toBe("x");
  });

  test("auth is the caller: a user (roles as they are now), an API key, the admin", async () => {
    const u = await registerUser(t, "fn-user@example.com");
    expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { roles: ["staff"] })).status).toBe(200);
    const res = await t.req("GET", "/api/v1/fn/hello/me", { token: u.token });
    expect(res.body.auth).toEqual({ kind: "user", id: u.id, email: "fn-user@example.com", roles: ["staff"], verified: false, api_key: false });
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: u.token, body: { name: "k" } });
    const viaKey = await t.req("GET", "/api/v1/fn/hello/me", { headers: { "x-api-key": key.body.key } });
    expect(viaKey.body.auth).toMatchObject({ id: u.id, api_key: true });
    expect((await t.admin("GET", "/api/v1/fn/hello/me")).body.auth).toEqual({ kind: "admin", id: null, email: null, roles: [], verified: true, api_key: false });
    // Wrong credentials are 401 as on the data API.
    const bad = await t.req("GET", "/api/v1/fn/hello/me", { token: "nope" });
    expect(bad.status).toBe(401);
  });

  test("a literal segment wins over a parameter; unknown path 404; wrong method 405 with Allow", async () => {
    expect((await t.req("GET", "/api/v1/fn/orders/stats")).body).toEqual({ stats: true });
    expect((await t.req("GET", "/api/v1/fn/orders/o1")).body).toEqual({ order: "o1" });
    const missing = await t.req("GET", "/api/v1/fn/nowhere/at/all");
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: "no such route", code: "not_found" });
    const wrong = await t.req("DELETE", "/api/v1/fn/orders/o1");
    expect(wrong.status).toBe(405);
    expect(wrong.body.code).toBe("method_not_allowed");
    expect(wrong.headers.get("allow")).toBe("GET");
    expect((await t.req("GET", "/api/v1/fn/hello/%E0%A4%A")).status).toBe(400);
  });

  test("body: JSON parsed, raw text exact, forms as fields, other types raw only; malformed JSON 400", async () => {
    const raw = '{ "b": 2,\n "a": [1, "é"] }';
    const json = await t.req("POST", "/api/v1/fn/echo", { body: raw });
    expect(json.body).toEqual({ body: { b: 2, a: [1, "é"] }, rawBody: raw, type: "application/json" });
    const form = await t.req("POST", "/api/v1/fn/echo", { body: "x=1&y=two", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.body.body).toEqual({ x: "1", y: "two" });
    const text = await t.req("POST", "/api/v1/fn/echo", { body: "{not json", headers: { "content-type": "text/plain" } });
    expect(text.body).toEqual({ body: null, rawBody: "{not json", type: "text/plain" });
    const bad = await t.req("POST", "/api/v1/fn/echo", { body: "{not json" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_json");
    const deep = await t.req("POST", "/api/v1/fn/echo", { body: "[".repeat(100) + "]".repeat(100) });
    expect(deep.status).toBe(400);
    // A form holds at most 1,000 fields, as a JSON body's object its keys.
    const formOf = (n: number) => Array.from({ length: n }, (_, i) => `f${i}=${i}`).join("&");
    const wide = await t.req("POST", "/api/v1/fn/echo", { body: formOf(1001), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(wide.status).toBe(400);
    expect(wide.body).toEqual({ error: "a form body has more than 1000 fields", code: "bad_request" });
    const full = await t.req("POST", "/api/v1/fn/echo", { body: formOf(1000), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(Object.keys(full.body.body)).toHaveLength(1000);
  });

  test("a body over the limit is 413 payload_too_large", async () => {
    const big = "x".repeat(t.ctx.config.maxBodyBytes + 1);
    const res = await t.req("POST", "/api/v1/fn/echo", { body: big, headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
  });

  test("undefined answers 204; a Response is sent as it is", async () => {
    const none = await t.req("POST", "/api/v1/fn/nothing");
    expect(none.status).toBe(204);
    expect(none.text).toBe("");
    const pot = await t.req("GET", "/api/v1/fn/teapot");
    expect(pot.status).toBe(418);
    expect(pot.text).toBe("short and stout");
    expect(pot.headers.get("x-kind")).toBe("teapot");
  });
});

describe("errors", () => {
  test("a thrown status answers it in §1's shape, with its own snake_case code or the status's", async () => {
    const c = await t.req("GET", "/api/v1/fn/conflict");
    expect(c.status).toBe(409);
    expect(c.body).toEqual({ error: "already paid", code: "conflict" });
    const coded = await t.req("GET", "/api/v1/fn/coded");
    expect(coded.status).toBe(402);
    expect(coded.body).toEqual({ error: "card declined", code: "card_declined" });
    const invalid = await t.req("GET", "/api/v1/fn/invalid");
    expect(invalid.status).toBe(422);
    expect(invalid.body).toEqual({ errors: [{ field: "qty", rule: "max", message: "at most 5" }] });
  });

  test("any other throw is 500 internal, logged with its stack, never the request body", async () => {
    const before = t.log.lines.length;
    const res = await t.req("GET", "/api/v1/fn/crash", { body: "card=4242424242424242", headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal error", code: "internal" });
    const lines = JSON.stringify(t.log.lines.slice(before));
    expect(lines).toContain("boom in handler");
    expect(lines).toContain('"file":"shop.ts"');
    expect(lines).toContain('"stack":"Error: boom in handler');
    expect(lines).not.toContain("4242424242424242");
  });

  test("a throw after a write leaves nothing and sends no event; so does an answer that is not JSON", async () => {
    // Every order (a filter on a field no record has yet would be 400).
    const items = async () => (await t.admin("GET", "/api/v1/orders?limit=500")).body.items.map((o: { item: string }) => o.item);
    const seen = events.length;
    expect((await t.req("POST", "/api/v1/fn/crash-after-write")).status).toBe(500);
    const refused = await t.req("POST", "/api/v1/fn/refuse-after-write");
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: "changed my mind", code: "bad_request" });
    expect((await t.req("POST", "/api/v1/fn/bigint")).status).toBe(500);
    expect(await items()).not.toContain("ghost");
    expect(await items()).not.toContain("big");
    expect(events.length).toBe(seen);
  });
});

describe("a payment provider's signed callback", () => {
  const sign = (body: string) => createHmac("sha256", SECRET).update(body).digest("hex");

  test("a valid signature marks the order paid and records the payment in one transaction; a bad one is 401", async () => {
    const order = await t.admin("POST", "/api/v1/orders", { item: "book", status: "new" });
    expect(order.body.touched).toBe(true); // the collection's hook ran
    // The signature covers the exact bytes sent (spacing and key order included).
    const body = `{"order_id":"${order.body._id}",  "amount": 1999}`;
    const forged = await t.req("POST", "/api/v1/fn/payments/webhook", { body: body.replace("1999", "1"), headers: { "x-signature": sign(body) } });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: "bad signature", code: "invalid_signature" });
    expect((await t.admin("GET", `/api/v1/orders/${order.body._id}`)).body.status).toBe("new");

    const seen = events.length;
    const ok = await t.req("POST", "/api/v1/fn/payments/webhook", { body, headers: { "x-signature": sign(body) } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, status: "paid" });
    const stored = (await t.admin("GET", `/api/v1/orders/${order.body._id}`)).body;
    expect(stored).toMatchObject({ status: "paid", paid_amount: 1999 });
    const payments = (await t.admin("GET", `/api/v1/payments?filter=order:eq:${order.body._id}`)).body.items;
    expect(payments.map((p: { amount: number }) => p.amount)).toEqual([1999]);
    // Events after commit, the update and the create, made by the admin rights of tx.
    expect(events.slice(seen).map((e) => [e.collection, e.action, e.by])).toEqual([
      ["orders", "update", "admin"],
      ["payments", "create", "admin"],
    ]);
    // Delivered again (providers retry): idempotent.
    expect((await t.req("POST", "/api/v1/fn/payments/webhook", { body, headers: { "x-signature": sign(body) } })).body).toEqual({ ok: true, already: true });
  });
});

describe("loading", () => {
  test("a collection cannot be named fn (its records would be unreachable)", async () => {
    const res = await t.admin("POST", "/api/v1/admin/collections", { name: "fn" });
    expect(res.status).toBe(400);
  });

  test("a file with routes alone loads; bad routes and conflicts between files are load errors naming them", async () => {
    const only = await loadHooks(hooksDir({ "r.ts": `export const routes = [{ method: "GET", path: "a/:b", handler: () => 1 }];\n` }));
    expect(only.list).toEqual([]);
    expect(only.routes!.map((r) => [r.method, r.path])).toEqual([["GET", "a/:b"]]);
    const cases: [Record<string, string>, RegExp][] = [
      [{ "r.ts": `export const routes = [{ method: "TRACE", path: "/a", handler() {} }];` }, /method must be one of GET, POST, PUT, PATCH, DELETE/],
      [{ "r.ts": `export const routes = [{ method: "GET", path: "/a b", handler() {} }];` }, /each segment must be/],
      [{ "r.ts": `export const routes = [{ method: "GET", path: "/a", handler: 1 }];` }, /handler must be a function/],
      [{ "r.ts": `export const routes = [{ method: "GET", path: "/a/:x/:x", handler() {} }];` }, /names the parameter "x" twice/],
      [{ "r.ts": `export const routes = { method: "GET" };` }, /"routes" must be an array/],
      [{ "r.ts": `export const routes = [{ method: "GET", path: "/a", handler() {}, auth: true }];` }, /unknown key "auth"/],
      [
        { "a.ts": `export const routes = [{ method: "POST", path: "/orders/:id", handler() {} }];`, "b.ts": `export const routes = [{ method: "post", path: "/orders/:orderId/", handler() {} }];` },
        /routes conflict: POST \/orders\/:orderId\/ of hook file .*b\.ts and POST \/orders\/:id of hook file .*a\.ts/,
      ],
    ];
    for (const [files, message] of cases) {
      const err = await loadHooks(hooksDir(files)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HookLoadError);
      expect((err as Error).message).toMatch(message);
    }
    // Routes in the default object, with hooks or alone, load as the routes export does.
    const inDefault = await loadHooks(
      hooksDir({
        "a.ts": `export default { collection: "orders", beforeCreate() {}, routes: [{ method: "GET", path: "/in-a", handler: () => 1 }] };`,
        "b.ts": `export default { routes: [{ method: "GET", path: "/in-b", handler: () => 2 }] };\nexport const routes = [{ method: "POST", path: "/in-b", handler: () => 3 }];`,
      }),
    );
    expect(inDefault.list.map((h) => h.collection)).toEqual(["orders"]);
    expect(inDefault.routes!.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /in-a", "POST /in-b", "GET /in-b"]);
    // Different methods on one path do not conflict.
    const both = await loadHooks(hooksDir({ "a.ts": `export const routes = [{ method: "GET", path: "/x", handler() {} }, { method: "POST", path: "/x", handler() {} }];` }));
    expect(both.routes!.length).toBe(2);
  });
});

describe("reload", () => {
  test("routes follow a reload; a broken file, or one whose routes clash with an earlier file's, keeps its previous routes", async () => {
    const { reloadHooks } = await import("../../src/ops/hook-files.ts");
    const rdir = hooksDir({ "a.js": `export const routes = [{ method: "GET", path: "/v", handler: () => "v1" }];\n` });
    const app = createTestApp({ env: { HOOKS_DIR: rdir }, context: { hooks: await loadHooks(rdir) } });
    try {
      const v = async () => (await app.req("GET", "/api/v1/fn/v")).body;
      expect(await v()).toBe("v1");
      writeFileSync(join(rdir, "a.js"), `export const routes = [{ method: "GET", path: "/v", handler: () => "v2" }, { method: "GET", path: "/w", handler: () => "w" }];\n`);
      await reloadHooks(app.ctx);
      expect([await v(), (await app.req("GET", "/api/v1/fn/w")).body]).toEqual(["v2", "w"]);

      writeFileSync(join(rdir, "a.js"), `export const routes = [{ method: "NOPE", path: "/v", handler: () => "v3" }];\n`);
      const broken = await reloadHooks(app.ctx);
      expect(broken.items.find((i) => i.file === "a.js")?.error).toMatch(/method must be one of/);
      expect(await v()).toBe("v2");

      writeFileSync(join(rdir, "b.js"), `export const routes = [{ method: "GET", path: "/:x", handler: () => "b" }, { method: "POST", path: "/b", handler: () => "b" }];\n`);
      writeFileSync(join(rdir, "c.js"), `export const routes = [{ method: "GET", path: "/w/", handler: () => "c" }];\n`);
      const clash = await reloadHooks(app.ctx);
      expect(clash.items.map((i) => [i.file, i.error === null ? null : i.error.replace(/hook file \S+\//g, "")])).toEqual([
        ["a.js", expect.stringMatching(/method must be one of/)],
        ["b.js", null],
        ["c.js", "routes conflict: GET /w/ of c.js and GET /w of a.js answer the same requests"],
      ]);
      // a's previous routes stay; b's new ones join (a literal wins over b's parameter); c never loaded.
      expect([await v(), (await app.req("GET", "/api/v1/fn/w")).body, (await app.req("GET", "/api/v1/fn/zz")).body]).toEqual(["v2", "w", "b"]);
    } finally {
      await app.close();
    }
  });
});
