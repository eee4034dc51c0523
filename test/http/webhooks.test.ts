import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { closeContext, createContext } from "../../src/app-context.ts";
import { startWebhookWorker, type WebhookWorker } from "../../src/webhooks/worker.ts";
import { ADMIN_SECRET, createCollection, createTestApp, patchSettings, registerUser, type TestApp } from "../helpers/app.ts";
import { secondEngine } from "../helpers/engine.ts";
import { startReceiver, validSignature, type Receiver } from "../helpers/receiver.ts";
import { countRows } from "../helpers/schema.ts";
import { waitFor } from "../helpers/wait.ts";

// Webhooks (CONTRACT §15): the admin API, the outbox written in the change's transaction, signed
// deliveries retried with backoff, the attempts' history and retry, and several workers on one database.

const WEBHOOKS = "/api/v1/admin/webhooks";
const SECRET = "a-receiver-secret-0123456789";

describe("the webhook admin API", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = createTestApp();
    await createCollection(t, "orders");
    await createCollection(t, "Notes");
    // The first app of the file may wait for a throwaway PostgreSQL cluster to start.
  }, 30_000);
  afterAll(() => t.close());

  test("POST creates a webhook with defaults and shows its made secret once; GET masks it", async () => {
    const res = await t.admin("POST", WEBHOOKS, { url: "http://127.0.0.1:9/hook", collections: ["orders"] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      url: "http://127.0.0.1:9/hook",
      collections: ["orders"],
      actions: ["create", "update", "delete", "restore"],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      enabled: true,
      pending: 0,
      created_at: t.clock.now(),
      updated_at: t.clock.now(),
    });
    const got = await t.admin("GET", `${WEBHOOKS}/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...res.body, secret: "********" });
    const list = await t.admin("GET", WEBHOOKS);
    expect(list.body.items).toContainEqual({ ...res.body, secret: "********" });
  });

  test("a given secret, actions in their order, collection names as the catalog spells them, '*' alone", async () => {
    const res = await t.admin("POST", WEBHOOKS, {
      url: "https://hooks.example.com/in?x=1",
      collections: ["notes", "ORDERS", "notes"],
      actions: ["delete", "create", "delete"],
      secret: SECRET,
      enabled: false,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ collections: ["Notes", "orders"], actions: ["create", "delete"], secret: SECRET, enabled: false });
    const all = await t.admin("POST", WEBHOOKS, { url: "http://127.0.0.1:9/", collections: ["orders", "*"] });
    expect(all.body.collections).toEqual(["*"]);
  });

  const bad: [string, unknown, string][] = [
    ["no url", { collections: ["*"] }, "url is required"],
    ["an ftp url", { url: "ftp://example.com/x", collections: ["*"] }, "url must be an absolute http:// or https:// URL"],
    ["a relative url", { url: "/hook", collections: ["*"] }, "url must be an absolute http:// or https:// URL"],
    ["a javascript: url", { url: "javascript:alert(1)", collections: ["*"] }, "url must be an absolute http:// or https:// URL"],
    ["a url too long", { url: `http://example.com/${"a".repeat(2048)}`, collections: ["*"] }, "url is longer than 2048 characters"],
    ["no collections", { url: "http://example.com/" }, 'collections must list 1 to 100 collection names, or "*"'],
    ["empty collections", { url: "http://example.com/", collections: [] }, 'collections must list 1 to 100 collection names, or "*"'],
    ["an invalid collection name", { url: "http://example.com/", collections: ["orders", "no such"] }, 'invalid collection name "no such"'],
    ["an unknown action", { url: "http://example.com/", collections: ["*"], actions: ["create", "hard_delete"] }, "actions must list one or more of: create, update, delete, restore"],
    ["no action", { url: "http://example.com/", collections: ["*"], actions: [] }, "actions must list one or more of: create, update, delete, restore"],
    ["an empty secret", { url: "http://example.com/", collections: ["*"], secret: "" }, "secret must be 1 to 256 characters"],
    ["a secret too long", { url: "http://example.com/", collections: ["*"], secret: "s".repeat(257) }, "secret must be 1 to 256 characters"],
    ["the mask as secret", { url: "http://example.com/", collections: ["*"], secret: "********" }, "secret must be a new secret, not the mask"],
    ["an unknown key", { url: "http://example.com/", collections: ["*"], headers: {} }, 'unknown key "headers"'],
    ["enabled not a boolean", { url: "http://example.com/", collections: ["*"], enabled: "yes" }, "enabled must be a boolean"],
    ["a body that is an array", [], "the request body must be a JSON object"],
  ];
  for (const [name, body, error] of bad) {
    test(`400 for ${name}`, async () => {
      const res = await t.admin("POST", WEBHOOKS, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error, code: "bad_request" });
    });
  }

  test("PATCH changes what is given; the mask keeps the secret, a new one (or null: made) is shown once", async () => {
    const made = (await t.admin("POST", WEBHOOKS, { url: "http://127.0.0.1:9/a", collections: ["orders"], secret: SECRET })).body;
    t.clock.advance(5);
    const kept = await t.admin("PATCH", `${WEBHOOKS}/${made.id}`, { url: "http://127.0.0.1:9/b", secret: "********", actions: ["update"] });
    expect(kept.status).toBe(200);
    expect(kept.body).toEqual({ ...made, url: "http://127.0.0.1:9/b", actions: ["update"], secret: "********", updated_at: made.created_at + 5 });
    const renewed = await t.admin("PATCH", `${WEBHOOKS}/${made.id}`, { secret: null, enabled: false });
    expect(renewed.body.secret).toMatch(/^whsec_/);
    expect(renewed.body.enabled).toBe(false);
    expect((await t.admin("GET", `${WEBHOOKS}/${made.id}`)).body.secret).toBe("********");
    const bad = await t.admin("PATCH", `${WEBHOOKS}/${made.id}`, { collections: ["missing one"] });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'invalid collection name "missing one"', code: "bad_request" });
    const badSecret = await t.admin("PATCH", `${WEBHOOKS}/${made.id}`, { secret: 5 });
    expect(badSecret.body).toEqual({ error: "secret must be a string, or null to make a new one", code: "bad_request" });
  });

  test("DELETE answers { ok: true }; the webhook is gone (404 after)", async () => {
    const made = (await t.admin("POST", WEBHOOKS, { url: "http://127.0.0.1:9/x", collections: ["*"] })).body;
    expect((await t.admin("DELETE", `${WEBHOOKS}/${made.id}`)).body).toEqual({ ok: true });
    for (const [method, path] of [
      ["GET", `${WEBHOOKS}/${made.id}`],
      ["PATCH", `${WEBHOOKS}/${made.id}`],
      ["DELETE", `${WEBHOOKS}/${made.id}`],
      ["GET", `${WEBHOOKS}/${made.id}/deliveries`],
      ["POST", `${WEBHOOKS}/${made.id}/deliveries/nope/retry`],
    ] as const) {
      const res = await t.admin(method, path, method === "PATCH" ? { enabled: true } : undefined);
      expect([method, path, res.status, res.body]).toEqual([method, path, 404, { error: "webhook not found", code: "not_found" }]);
    }
  });

  test("only admins: a user gets 403, nobody 401", async () => {
    const user = await registerUser(t, "webhook-user@example.com");
    for (const [method, path] of [
      ["GET", WEBHOOKS],
      ["POST", WEBHOOKS],
      ["GET", `${WEBHOOKS}/x`],
      ["GET", `${WEBHOOKS}/x/deliveries`],
    ] as const) {
      expect((await t.req(method, path, { token: user.token, body: method === "POST" ? { url: "http://a.example/", collections: ["*"] } : undefined })).status).toBe(403);
      expect((await t.req(method, path)).status).toBe(401);
    }
  });

  test("with webhooks_allow_private_addresses false, loopback, private and local addresses are refused", async () => {
    await patchSettings(t, { webhooks_allow_private_addresses: false });
    try {
      for (const url of ["http://127.0.0.1:8080/", "http://localhost/", "http://api.localhost/", "http://10.1.2.3/", "http://[::1]/", "http://[::ffff:192.168.1.1]/", "http://169.254.169.254/latest"]) {
        const res = await t.admin("POST", WEBHOOKS, { url, collections: ["*"] });
        expect([url, res.status]).toEqual([url, 400]);
        expect(res.body.error).toContain("webhooks_allow_private_addresses is false");
      }
      expect((await t.admin("POST", WEBHOOKS, { url: "https://93.184.216.34/hook", collections: ["*"] })).status).toBe(201);
    } finally {
      await patchSettings(t, { webhooks_allow_private_addresses: true });
    }
  });
});

/** An app with "orders" and "notes", a receiver, and a worker (its clock is the app's manual clock). */
async function setup(answer?: Parameters<typeof startReceiver>[0]) {
  const t = createTestApp();
  await createCollection(t, "orders", { read: "public", create: "public", update: "public", delete: "public" });
  await createCollection(t, "notes", { read: "public", create: "public", update: "public", delete: "public" });
  const receiver = startReceiver(answer);
  const worker = startWebhookWorker(t.ctx, { pollMs: 60_000 });
  return {
    t,
    receiver,
    worker,
    async close() {
      await worker.stop({ graceMs: 0 });
      receiver.stop();
      await t.close();
    },
  };
}

async function addWebhook(t: TestApp, receiver: Receiver, extra: Record<string, unknown> = {}) {
  const res = await t.admin("POST", WEBHOOKS, { url: receiver.url, collections: ["orders"], secret: SECRET, ...extra });
  if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`);
  return res.body as { id: string };
}

describe("deliveries", () => {
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(() => s?.close());

  test("a webhook set up before its collection exists, with a short secret, gets the collection's events once it is made", async () => {
    s = await setup();
    const { t, receiver } = s;
    const hook = await addWebhook(t, receiver, { collections: ["Invoices"], secret: "s3cret" });
    expect((await t.admin("GET", `${WEBHOOKS}/${hook.id}`)).body.collections).toEqual(["Invoices"]);
    await createCollection(t, "invoices", { create: "public" });
    const made = await t.req("POST", "/api/v1/invoices", { body: { total: 3 } });
    expect(made.status).toBe(201);
    await waitFor(() => receiver.got.length === 1, { what: "the invoice's event" });
    const got = receiver.got[0]!;
    expect(JSON.parse(got.body)).toMatchObject({ collection: "invoices", action: "create", record: { _id: made.body._id, total: 3 } });
    expect(validSignature(got, "s3cret")).toBe(true);
  });

  test("a receiver that fails twice then succeeds gets the event three times, one event id, each signed", async () => {
    s = await setup((_r, n) => (n <= 2 ? 500 : 200));
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    const order = (await t.req("POST", "/api/v1/orders", { body: { total: 12 } })).body;
    await waitFor(() => receiver.answered === 1, { what: "the first attempt" });
    await worker.idle();
    // Not due before its second: 1 s later (the app's clock).
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(1);
    t.clock.advance(1_000);
    worker.poke();
    await waitFor(() => receiver.answered === 2, { what: "the second attempt" });
    await worker.idle();
    t.clock.advance(1_999);
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(2);
    t.clock.advance(1);
    worker.poke();
    await waitFor(() => receiver.answered === 3, { what: "the third attempt" });
    await worker.idle();

    expect(receiver.got.map((r) => r.attempt)).toEqual([1, 2, 3]);
    expect(new Set(receiver.got.map((r) => r.eventId)).size).toBe(1);
    expect(receiver.got[0]!.eventId).toMatch(/^[0-9A-Z]{26}$/);
    for (const r of receiver.got) {
      expect(validSignature(r, SECRET)).toBe(true);
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.json).toEqual({ collection: "orders", action: "create", record: order });
    }
    expect(validSignature({ ...receiver.got[0]!, body: receiver.got[0]!.body.replace("12", "13") }, SECRET)).toBe(false);

    const attempts = await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`);
    expect(attempts.status).toBe(200);
    expect(attempts.body.items.map((a: any) => [a.attempt, a.ok, a.response_status, a.status])).toEqual([
      [3, true, 200, "delivered"],
      [2, false, 500, "delivered"],
      [1, false, 500, "delivered"],
    ]);
    expect(attempts.body.items[2]).toEqual({
      id: expect.any(String),
      delivery_id: attempts.body.items[0].delivery_id,
      event_id: receiver.got[0]!.eventId,
      collection: "orders",
      action: "create",
      record_id: order._id,
      attempt: 1,
      at: expect.any(Number),
      duration_ms: expect.any(Number),
      ok: false,
      response_status: 500,
      error: "HTTP 500: nope",
      status: "delivered",
      next_attempt_at: null,
    });
    expect((await t.admin("GET", `${WEBHOOKS}/${hook.id}`)).body.pending).toBe(0);
  });

  test("each change is sent as section 10 says: update, soft delete, restore, hard delete; matching collections and actions only", async () => {
    s = await setup();
    const { t, receiver, worker } = s;
    await addWebhook(t, receiver);
    await addWebhook(t, receiver, { collections: ["*"], actions: ["delete"] });
    const a = (await t.req("POST", "/api/v1/orders", { body: { n: 1 } })).body;
    await t.req("POST", "/api/v1/notes", { body: { text: "not subscribed by the first" } });
    const updated = (await t.req("PATCH", `/api/v1/orders/${a._id}`, { body: { n: 2 } })).body;
    const deleted = (await t.req("DELETE", `/api/v1/orders/${a._id}`)).body;
    const restored = (await t.req("POST", `/api/v1/orders/${a._id}/restore`)).body;
    const note = (await t.req("POST", "/api/v1/notes", { body: { text: "x" } })).body;
    expect((await t.admin("DELETE", `/api/v1/admin/collections/notes/records/${note._id}`)).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/orders/records/${a._id}`)).status).toBe(200);
    await waitFor(() => receiver.got.length === 8, { what: "eight deliveries" });
    await worker.idle();
    const bodies = receiver.got.map((r) => r.json);
    const expected = [
      { collection: "orders", action: "create", record: a },
      { collection: "orders", action: "update", record: updated },
      // The soft delete goes to both webhooks, with one event id.
      { collection: "orders", action: "delete", record: deleted },
      { collection: "orders", action: "delete", record: deleted },
      { collection: "orders", action: "restore", record: restored },
      { collection: "notes", action: "delete", record: { _id: note._id } },
      { collection: "orders", action: "delete", record: { _id: a._id } },
      { collection: "orders", action: "delete", record: { _id: a._id } },
    ];
    expect(bodies.length).toBe(expected.length);
    for (const e of expected) expect(bodies).toContainEqual(e);
    const softDeletes = receiver.got.filter((r) => r.json.action === "delete" && r.json.record._deleted_at);
    expect(softDeletes.length).toBe(2);
    expect(softDeletes[0]!.eventId).toBe(softDeletes[1]!.eventId);
    expect(new Set(receiver.got.map((r) => r.eventId)).size).toBe(6);
  });

  test("a rolled-back write writes no outbox row and sends nothing; a bulk insert sends one event per record", async () => {
    s = await setup();
    const { t, receiver, worker } = s;
    await addWebhook(t, receiver);
    const batch = await t.req("POST", "/api/v1/orders/batch", {
      body: { operations: [{ op: "create", data: { n: 1 } }, { op: "update", id: "missing", data: { n: 2 } }] },
    });
    expect(batch.status).toBe(400);
    const bulk = await t.req("POST", "/api/v1/orders/bulk", { body: [{ n: 1 }, { n: "two" }] });
    expect(bulk.status).toBe(422);
    expect(await countRows(t, "_webhook_deliveries")).toBe(0);
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(0);
    const ok = await t.req("POST", "/api/v1/orders/bulk", { body: [{ n: 1 }, { n: 2 }, { n: 3 }] });
    expect(ok.status).toBe(201);
    await waitFor(() => receiver.got.length === 3, { what: "three deliveries" });
    expect(receiver.got.map((r) => r.json.record.n).sort()).toEqual([1, 2, 3]);
    expect(new Set(receiver.got.map((r) => r.eventId)).size).toBe(3);
  });

  test("a webhook added while a round reads the webhooks gets the next event at once: a list read before the change is not kept", async () => {
    const t = createTestApp();
    await createCollection(t, "orders", { read: "public", create: "public" });
    const receiver = startReceiver();
    // The worker's first round reads the webhooks (none yet) and is held before it gets the answer, until a webhook
    // has been added: its list then predates the change, as a round trip to PostgreSQL can make it.
    let release!: () => void;
    let gate: Promise<void> | null = new Promise<void>((r) => (release = r));
    let held = false;
    const all = t.ctx.db.all.bind(t.ctx.db);
    (t.ctx.db as { all: typeof all }).all = (async (sql: string, params?: unknown[]) => {
      const rows = await all(sql, params as never);
      if (gate && sql.includes("FROM _webhooks WHERE enabled")) {
        held = true;
        await gate;
      }
      return rows;
    }) as typeof all;
    // Rounds come only from commits here (the poll is a minute away).
    const worker = startWebhookWorker(t.ctx, { pollMs: 60_000 });
    s = { t, receiver, worker, close: async () => (await worker.stop({ graceMs: 0 }), receiver.stop(), await t.close()) };
    await waitFor(() => held, { what: "the first round reading the webhooks" });
    await addWebhook(t, receiver);
    gate = null;
    release();
    expect((await t.req("POST", "/api/v1/orders", { body: { n: 1 } })).status).toBe(201);
    await waitFor(() => receiver.got.length === 1, { what: "the delivery", timeoutMs: 10_000 });
  });

  test("a slow receiver never slows a write: writes complete while every delivery is held unanswered", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    s = await setup(async () => {
      await held;
      return 200;
    });
    const { t, receiver, worker } = s;
    await addWebhook(t, receiver);
    const first = await t.req("POST", "/api/v1/orders", { body: { n: 0 } });
    expect(first.status).toBe(201);
    await waitFor(() => receiver.got.length >= 1, { what: "a delivery in flight" });
    // Far more writes than the worker may have in flight: none of them waits for the receiver.
    const writes = await Promise.all(Array.from({ length: 60 }, (_, i) => t.req("POST", "/api/v1/orders", { body: { n: i + 1 } })));
    expect(writes.every((w) => w.status === 201)).toBe(true);
    expect(receiver.answered).toBe(0);
    expect(receiver.got.length).toBeLessThanOrEqual(8);
    release();
    await waitFor(() => receiver.answered === 61, { what: "every delivery, once released" });
    await worker.idle();
    expect(new Set(receiver.got.map((r) => r.json.record.n)).size).toBe(61);
  });

  test("a delivery failing for 24 hours is marked failed; retry sends it again with the same event id", async () => {
    s = await setup((_r, n) => (n <= 2 ? 503 : 204));
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    await t.req("POST", "/api/v1/orders", { body: { n: 1 } });
    await waitFor(() => receiver.answered === 1, { what: "the first attempt" });
    await worker.idle();
    // Its next attempt comes after the 24 hours: that one is the last.
    t.clock.advance(24 * 60 * 60 * 1000 - 500);
    worker.poke();
    await waitFor(() => receiver.answered === 2, { what: "the second attempt" });
    await worker.idle();
    const listed = (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items;
    expect(listed.map((a: any) => [a.attempt, a.status, a.next_attempt_at])).toEqual([
      [2, "failed", null],
      [1, "failed", null],
    ]);
    t.clock.advance(60 * 60 * 1000);
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(2);

    expect((await t.admin("POST", `${WEBHOOKS}/${hook.id}/deliveries/nope/retry`)).status).toBe(404);
    const retried = await t.admin("POST", `${WEBHOOKS}/${hook.id}/deliveries/${listed[0].delivery_id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: listed[0].delivery_id, webhook_id: hook.id, event_id: receiver.got[0]!.eventId, status: "pending", attempts: 2, next_attempt_at: t.clock.now() });
    await waitFor(() => receiver.answered === 3, { what: "the retried attempt" });
    await worker.idle();
    expect(receiver.got.map((r) => [r.eventId, r.attempt])).toEqual([1, 2, 3].map((n) => [receiver.got[0]!.eventId, n]));
    const history = (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items;
    expect(history[0]).toMatchObject({ attempt: 3, ok: true, response_status: 204, status: "delivered" });
    // The id an attempt is listed under retries its delivery too.
    const again = await t.admin("POST", `${WEBHOOKS}/${hook.id}/deliveries/${history[0].id}/retry`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: listed[0].delivery_id, status: "pending" });
  });

  test("timeouts and refused connections are failed attempts, retried; a redirect is not followed", async () => {
    s = await setup(() => 302);
    const { t, receiver, worker } = s;
    await worker.stop({ graceMs: 0 });
    s.worker = startWebhookWorker(t.ctx, { pollMs: 60_000, timeoutMs: 200 });
    const hook = await addWebhook(t, receiver);
    await t.req("POST", "/api/v1/orders", { body: { n: 1 } });
    await waitFor(() => receiver.answered === 1);
    await s.worker.idle();
    receiver.answer = () => new Promise((r) => setTimeout(() => r(200), 2_000));
    t.clock.advance(1_000);
    s.worker.poke();
    await waitFor(() => receiver.got.length === 2);
    await s.worker.idle();
    const closed = startReceiver();
    closed.stop();
    await t.admin("PATCH", `${WEBHOOKS}/${hook.id}`, { url: closed.url });
    t.clock.advance(2_000);
    s.worker.poke();
    await waitFor(async () => (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items.length === 3);
    const items = (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items;
    expect(items.map((a: any) => [a.attempt, a.ok, a.response_status])).toEqual([
      [3, false, null],
      [2, false, null],
      [1, false, 302],
    ]);
    expect(items[1].error).toBe("timed out after 200 ms");
    expect(items[0].error).toMatch(/ECONNREFUSED|connect/i);
    expect(items[0].next_attempt_at).toBe(t.clock.now() + 4_000);
  });

  test("a disabled webhook gets no new events; its waiting deliveries go out once it is enabled again", async () => {
    s = await setup((_r, n) => (n === 1 ? 500 : 200));
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    await t.req("POST", "/api/v1/orders", { body: { n: 1 } });
    await waitFor(() => receiver.answered === 1);
    await worker.idle();
    await t.admin("PATCH", `${WEBHOOKS}/${hook.id}`, { enabled: false });
    await t.req("POST", "/api/v1/orders", { body: { n: 2 } });
    t.clock.advance(5_000);
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(1);
    expect((await t.admin("GET", `${WEBHOOKS}/${hook.id}`)).body.pending).toBe(1);
    await t.admin("PATCH", `${WEBHOOKS}/${hook.id}`, { enabled: true });
    await waitFor(() => receiver.answered === 2);
    await worker.idle();
    expect(receiver.got.map((r) => [r.json.record.n, r.attempt])).toEqual([
      [1, 1],
      [1, 2],
    ]);
  });

  test("with webhooks_allow_private_addresses false, a delivery to a loopback address is refused and retried", async () => {
    s = await setup();
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    await patchSettings(t, { webhooks_allow_private_addresses: false });
    await t.req("POST", "/api/v1/orders", { body: { n: 1 } });
    await waitFor(async () => (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items.length === 1);
    await worker.idle();
    expect(receiver.got.length).toBe(0);
    const [a] = (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items;
    expect(a).toMatchObject({ ok: false, response_status: null, status: "pending", error: "refused: the address is a private address (127.0.0.1) (webhooks_allow_private_addresses is false)" });
  });

  test("the history keeps the last 100 attempts of a webhook, and deliveries while one of their attempts is listed", async () => {
    s = await setup();
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    const bulk = await t.req("POST", "/api/v1/orders/bulk", { body: Array.from({ length: 130 }, (_, i) => ({ n: i })) });
    expect(bulk.status).toBe(201);
    await waitFor(() => receiver.answered === 130, { what: "130 deliveries" });
    await worker.idle();
    const { pruneHistory } = await import("../../src/webhooks/worker.ts");
    await pruneHistory(t.ctx);
    expect(await countRows(t, "_webhook_attempts")).toBe(100);
    expect(await countRows(t, "_webhook_deliveries")).toBe(100);
    const items = (await t.admin("GET", `${WEBHOOKS}/${hook.id}/deliveries`)).body.items;
    expect(items.length).toBe(100);
    expect(new Set(items.map((a: any) => a.delivery_id)).size).toBe(100);
  });

  test("pruning deletes finished deliveries without a listed attempt in chunks, every one of them; pending ones stay", async () => {
    s = await setup();
    const { t, receiver, worker } = s;
    await worker.stop({ graceMs: 0 });
    await addWebhook(t, receiver);
    for (let i = 0; i < 5; i++) expect((await t.req("POST", "/api/v1/orders/bulk", { body: Array.from({ length: 500 }, (_, n) => ({ n })) })).status).toBe(201);
    await t.ctx.db.run("UPDATE _webhook_deliveries SET status = 'delivered' WHERE id IN (SELECT id FROM _webhook_deliveries ORDER BY id LIMIT 2300)");
    const { pruneHistory } = await import("../../src/webhooks/worker.ts");
    await pruneHistory(t.ctx);
    expect(await countRows(t, "_webhook_deliveries")).toBe(200);
    expect(await countRows(t, "_webhook_deliveries", "status = 'pending'")).toBe(200);
    expect(receiver.got.length).toBe(0);
  });

  test("deleting a webhook drops its pending deliveries: nothing more is sent", async () => {
    s = await setup(() => 500);
    const { t, receiver, worker } = s;
    const hook = await addWebhook(t, receiver);
    await t.req("POST", "/api/v1/orders", { body: { n: 1 } });
    await waitFor(() => receiver.answered === 1);
    await worker.idle();
    expect((await t.admin("DELETE", `${WEBHOOKS}/${hook.id}`)).status).toBe(200);
    expect(await countRows(t, "_webhook_deliveries")).toBe(0);
    expect(await countRows(t, "_webhook_attempts")).toBe(0);
    t.clock.advance(10_000);
    worker.poke();
    await worker.idle();
    expect(receiver.got.length).toBe(1);
  });
});

describe("several workers on one database", () => {
  test("workers of two nodes deliver each of many events exactly once; a write on either node reaches the outbox", async () => {
    const t = createTestApp();
    const other = createContext(t.config, { clock: t.clock, log: t.log, ...(await secondEngine(t)) });
    const receiver = startReceiver();
    const workers: WebhookWorker[] = [];
    try {
      await createCollection(t, "orders", { create: "public", read: "public" });
      await addWebhook(t, receiver);
      const { createRecord } = await import("../../src/records/create.ts");
      const { ANONYMOUS } = await import("../../src/principal.ts");
      // Half the events written through each node, before any worker runs: then both find all of them due at once.
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 300; i++) {
        if (i % 2) writes.push(t.req("POST", "/api/v1/orders", { body: { n: i } }));
        else writes.push(createRecord(other, "orders", { n: i }, ANONYMOUS));
      }
      await Promise.all(writes);
      expect(await countRows(t, "_webhook_deliveries", "status = 'pending'")).toBe(300);
      // Many claims side by side: small slots, so each worker claims again and again while the other does.
      for (const ctx of [t.ctx, other, t.ctx, other]) workers.push(startWebhookWorker(ctx, { pollMs: 5, concurrency: 4, perWebhook: 4 }));
      await waitFor(() => receiver.got.length >= 300, { what: "300 deliveries", timeoutMs: 30_000 });
      await Promise.all(workers.map((w) => w.idle()));
      const byEvent = new Map<string, number>();
      for (const r of receiver.got) byEvent.set(r.eventId, (byEvent.get(r.eventId) ?? 0) + 1);
      expect(byEvent.size).toBe(300);
      expect([...byEvent.values()].every((n) => n === 1)).toBe(true);
      expect(receiver.got.length).toBe(300);
      expect(new Set(receiver.got.map((r) => r.json.record.n)).size).toBe(300);
    } finally {
      await Promise.all(workers.map((w) => w.stop({ graceMs: 0 })));
      receiver.stop();
      await closeContext(other);
      await t.close();
    }
  }, 60_000);
});

test("the CLI-style context (no worker) writes the outbox, and the server's worker delivers it", async () => {
  const t = createTestApp();
  const cli = createContext(t.config, { clock: t.clock, log: t.log, ...(await secondEngine(t)) });
  const receiver = startReceiver();
  const worker = startWebhookWorker(t.ctx, { pollMs: 20 });
  try {
    await createCollection(t, "orders");
    await addWebhook(t, receiver);
    const { createRecord } = await import("../../src/records/create.ts");
    const { ADMIN } = await import("../../src/principal.ts");
    const made = await createRecord(cli, "orders", { n: 7 }, ADMIN);
    await waitFor(() => receiver.got.length === 1, { what: "the delivery of the other process's write" });
    expect(receiver.got[0]!.json).toEqual({ collection: "orders", action: "create", record: made });
    expect(ADMIN_SECRET).toBeTruthy();
  } finally {
    await worker.stop({ graceMs: 0 });
    receiver.stop();
    await closeContext(cli);
    await t.close();
  }
});
