import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";
import { AppError } from "../../src/errors.ts";
import { IDEMPOTENCY_CLAIM_MS, runIdempotent } from "../../src/idempotency/store.ts";

// A fresh app per scenario: they count records, move the clock a day on and leave claims behind, so they run in
// any order.
let t: TestApp;
let alice: { token: string; id: string };
let bob: { token: string; id: string };
beforeEach(async () => {
  t = createTestApp();
  for (const name of ["items", "bulky", "batched", "ruled", "raced", "aging", "plain"]) await createCollection(t, name);
  await t.admin("PUT", "/api/v1/admin/collections/ruled/rules", { field_rules: [{ field: "title", required: true, min: 3 }] });
  alice = await registerUser(t, "alice@example.com");
  bob = await registerUser(t, "bob@example.com");
});
afterEach(() => t.close());

const post = (path: string, body: unknown, key: string | null, token: string | null = alice.token) =>
  t.req("POST", path, { body, token, headers: key === null ? {} : { "idempotency-key": key } });

describe("Idempotency-Key on POST", () => {
  test("a create retried with the same key answers the first answer again, marked replayed, and makes one record", async () => {
    const first = await post("/api/v1/items", { title: "one" }, "create-1");
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    for (let i = 0; i < 3; i++) {
      const again = await post("/api/v1/items", { title: "one" }, "create-1");
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
    }
    expect(await countRows(t, "items")).toBe(1);
  });

  test("the same key with another body, path or method is 422 idempotency_key_reused and does nothing", async () => {
    await post("/api/v1/items", { title: "two" }, "create-2");
    const other = await post("/api/v1/items", { title: "TWO" }, "create-2");
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: expect.any(String), code: "idempotency_key_reused" });
    expect((await post("/api/v1/plain", { title: "two" }, "create-2")).status).toBe(422);
    expect((await post("/api/v1/items/bulk", [{ title: "two" }], "create-2")).status).toBe(422);
    expect(await countRows(t, "items")).toBe(1);
    expect(await countRows(t, "plain")).toBe(0);
  });

  test("keys are per caller: another user's same key does the work for them", async () => {
    const a = await post("/api/v1/items", { title: "three" }, "create-3");
    const b = await post("/api/v1/items", { title: "three" }, "create-3", bob.token);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(b.body._id).not.toBe(a.body._id);
    expect(b.body._owner_id).toBe(bob.id);
  });

  test("without the header nothing changes: every POST creates", async () => {
    await post("/api/v1/plain", { n: 1 }, null);
    await post("/api/v1/plain", { n: 1 }, null);
    expect(await countRows(t, "plain")).toBe(2);
  });

  test("a key that is empty, longer than 255 or not printable ASCII is 400 and does nothing", async () => {
    const before = await countRows(t, "plain");
    for (const key of ["", " ", "x".repeat(256), "clé", "a\tb"]) {
      const res = await post("/api/v1/plain", { n: 2 }, key);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.stringContaining("Idempotency-Key"), code: "bad_request" });
    }
    expect((await post("/api/v1/plain", { n: 2 }, "x".repeat(255))).status).toBe(201);
    expect(await countRows(t, "plain")).toBe(before + 1);
  });

  test("an error answer is not kept: the request did nothing, and its retry runs again", async () => {
    const bad = await post("/api/v1/ruled", { title: "x" }, "ruled-1");
    expect(bad.status).toBe(422);
    const again = await post("/api/v1/ruled", { title: "x" }, "ruled-1");
    expect(again.status).toBe(422);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expect(await countRows(t, "ruled")).toBe(0);
  });

  test("bulk and batch are replayed whole", async () => {
    const bulk = await post("/api/v1/bulky/bulk", [{ n: 1 }, { n: 2 }], "bulk-1");
    expect(bulk.status).toBe(201);
    const bulkAgain = await post("/api/v1/bulky/bulk", [{ n: 1 }, { n: 2 }], "bulk-1");
    expect(bulkAgain.status).toBe(201);
    expect(bulkAgain.body).toEqual(bulk.body);
    expect(await countRows(t, "bulky")).toBe(2);

    const ops = { operations: [{ op: "create", data: { n: 1 } }, { op: "create", data: { n: 2 } }] };
    const batch = await post("/api/v1/batched/batch", ops, "batch-1");
    expect(batch.status).toBe(200);
    const batchAgain = await post("/api/v1/batched/batch", ops, "batch-1");
    expect(batchAgain.status).toBe(200);
    expect(batchAgain.headers.get("idempotent-replayed")).toBe("true");
    expect(batchAgain.body).toEqual(batch.body);
    expect(await countRows(t, "batched")).toBe(2);
  });

  test("a write with a key sends its change events once committed, as without one; a replay sends none", async () => {
    await t.ready;
    const seen: string[] = [];
    t.ctx.events.subscribe((e) => seen.push(`${e.collection} ${e.action} ${e.record.n ?? e.record.title}`));
    const settle = () => new Promise((r) => setTimeout(r, 50));
    expect((await post("/api/v1/items", { title: "evented" }, "ev-1")).status).toBe(201);
    expect((await post("/api/v1/bulky/bulk", [{ n: 1 }, { n: 2 }], "ev-2")).status).toBe(201);
    expect((await post("/api/v1/batched/batch", { operations: [{ op: "create", data: { n: 3 } }] }, "ev-3")).status).toBe(200);
    await settle();
    expect(seen).toEqual(["items create evented", "bulky create 1", "bulky create 2", "batched create 3"]);
    for (const [path, body, key] of [["/api/v1/items", { title: "evented" }, "ev-1"], ["/api/v1/bulky/bulk", [{ n: 1 }, { n: 2 }], "ev-2"]] as const)
      expect((await post(path, body, key)).headers.get("idempotent-replayed")).toBe("true");
    // A refused write with a key sends nothing.
    expect((await post("/api/v1/ruled", { title: "x" }, "ev-4")).status).toBe(422);
    await settle();
    expect(seen).toHaveLength(4);
  });

  test("20 requests with one key at the same time: one record, every answer the same", async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => post("/api/v1/raced", { title: "race" }, "race-1")));
    for (const a of answers) {
      expect(a.status).toBe(201);
      expect(a.body).toEqual(answers[0]!.body);
    }
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(await countRows(t, "raced")).toBe(1);
  });

  test("register and API keys: a retry gets the same account, session and key, made once", async () => {
    const body = { email: "carol@example.com", password: "password123" };
    const first = await post("/api/v1/auth/register", body, "register-1", null);
    expect(first.status).toBe(201);
    const again = await post("/api/v1/auth/register", body, "register-1", null);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    // Without the key the same call is refused: the account exists once.
    expect((await post("/api/v1/auth/register", body, null, null)).status).toBe(409);

    const key = await post("/api/v1/auth/api-keys", { name: "ci" }, "apikey-1");
    expect(key.status).toBe(201);
    const keyAgain = await post("/api/v1/auth/api-keys", { name: "ci" }, "apikey-1");
    expect(keyAgain.body).toEqual(key.body);
    const list = await t.req("GET", "/api/v1/auth/api-keys", { token: alice.token });
    expect(list.body.items.filter((k: { name: string }) => k.name === "ci")).toHaveLength(1);

    const user = await t.req("POST", "/api/v1/admin/users", {
      body: { email: "dave@example.com", password: "password123" },
      headers: { authorization: `Bearer ${t.config.adminSecret}`, "idempotency-key": "admin-user-1" },
    });
    expect(user.status).toBe(201);
    const userAgain = await t.req("POST", "/api/v1/admin/users", {
      body: { email: "dave@example.com", password: "password123" },
      headers: { authorization: `Bearer ${t.config.adminSecret}`, "idempotency-key": "admin-user-1" },
    });
    expect(userAgain.status).toBe(201);
    expect(userAgain.body).toEqual(user.body);
  });

  test("a register sent again while the first with its key still runs gets 409 idempotency_key_in_progress; afterwards the first answer", async () => {
    const body = { email: "erin@example.com", password: "password123" };
    const answers = await Promise.all(Array.from({ length: 5 }, () => post("/api/v1/auth/register", body, "register-race", null)));
    const made = answers.filter((a) => a.status === 201 && a.headers.get("idempotent-replayed") === null);
    expect(made).toHaveLength(1);
    const busy = answers.filter((a) => a.status === 409);
    // The password's hash takes long enough for the others to come while it runs.
    expect(busy.length).toBeGreaterThan(0);
    for (const a of busy) {
      expect(a.body).toEqual({ error: expect.any(String), code: "idempotency_key_in_progress" });
      expect(a.headers.get("retry-after")).toBe("1");
    }
    for (const a of answers) if (a.status !== 409) expect([a.status, a.body]).toEqual([201, made[0]!.body]);
    const retry = await post("/api/v1/auth/register", body, "register-race", null);
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.body]).toEqual([201, "true", made[0]!.body]);
  });

  test("a claim whose request never finished (its process died) frees its key after 5 minutes", async () => {
    const req = { key: "stuck-1", caller: "admin", request: "POST /api/v1/plain\n{}" };
    // The first request claims the key and never ends, as if its process had died mid-way. Its work starts once
    // its claim is stored: only then does the key count as taken (a call before that would take it itself).
    let started!: () => void;
    const claimed = new Promise<void>((resolve) => (started = resolve));
    void runIdempotent(t.ctx, req, { status: 201, transaction: false }, () => (started(), new Promise<never>(() => {})));
    await claimed;
    const busy = await runIdempotent(t.ctx, req, { status: 201, transaction: false }, async () => "ran").catch((err) => err);
    expect(busy).toBeInstanceOf(AppError);
    expect(busy.code).toBe("idempotency_key_in_progress");
    t.clock.advance(IDEMPOTENCY_CLAIM_MS - 1_000);
    await expect(runIdempotent(t.ctx, req, { status: 201, transaction: false }, async () => "ran")).rejects.toMatchObject({ status: 409 });
    t.clock.advance(2_000);
    expect(await runIdempotent(t.ctx, req, { status: 201, transaction: false }, async () => "ran")).toEqual({ replayed: false, value: "ran" });
    expect(await runIdempotent(t.ctx, req, { status: 201, transaction: false }, async () => "again")).toEqual({ replayed: true, answer: { status: 201, body: "ran" } });
  });

  test("neither the key nor the answer is stored as sent", async () => {
    const res = await post("/api/v1/plain", { secret: "visible-value" }, "stored-key-1");
    const rows = await t.db.all<Record<string, unknown>>("SELECT * FROM _idempotency_keys");
    const text = JSON.stringify(rows);
    expect(text).not.toContain("stored-key-1");
    expect(text).not.toContain("visible-value");
    expect(text).not.toContain(res.body._id);
  });

  test("a key is kept 24 hours: after that the same key creates again", async () => {
    const first = await post("/api/v1/aging", { n: 1 }, "aging-1", t.config.adminSecret);
    // As the admin: a user's access token would expire meanwhile.
    t.clock.advance(24 * 60 * 60_000 - 1_000);
    expect((await post("/api/v1/aging", { n: 1 }, "aging-1", t.config.adminSecret)).body._id).toBe(first.body._id);
    t.clock.advance(2_000);
    const later = await post("/api/v1/aging", { n: 1 }, "aging-1", t.config.adminSecret);
    expect(later.status).toBe(201);
    expect(later.headers.get("idempotent-replayed")).toBeNull();
    expect(await countRows(t, "aging")).toBe(2);
  });
});
