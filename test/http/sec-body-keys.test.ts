import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { MAX_BODY_KEYS } from "../../src/http/body.ts";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// A body of 900,000 null keys (15 MB) took seconds to answer and held every other request meanwhile:
// parsing an object costs about a microsecond a key, and the 500-field cap counts only non-null values.
// A record object with more keys than fields can exist is refused before the body is parsed.

setDefaultTimeout(60_000);

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = createTestApp();
  await createCollection(t, "posts", { read: "public", create: "public", update: "public" });
  await createCollection(t, "members", { create: "authenticated" });
  // The field the tests filter on exists whatever order they run in.
  expect((await t.admin("POST", "/api/v1/posts", { title: "first" })).status).toBe(201);
  token = (await registerUser(t, "keys@example.com")).token;
});
afterAll(() => t.close());

/** `{"k0":null,"k1":null,…}` with `n` keys (and `extra` entries first). */
function manyKeys(n: number, extra = ""): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"k${i}":null`);
  return `{${extra}${parts.join(",")}}`;
}

const fieldsError = (field: string, index?: number) => ({
  field,
  rule: "fields",
  message: `a record has at most ${MAX_BODY_KEYS} keys (a collection has at most 500 fields).`,
  ...(index === undefined ? {} : { index }),
});

describe("the key limit of record objects", () => {
  test("a record of 1000 keys is taken; of 1001, 422 rule fields naming the key past the limit", async () => {
    const ok = await t.req("POST", "/api/v1/posts", { body: manyKeys(MAX_BODY_KEYS - 1, '"title":"x",') });
    expect(ok.status).toBe(201);
    const over = await t.req("POST", "/api/v1/posts", { body: manyKeys(MAX_BODY_KEYS, '"title":"x",') });
    expect(over.status).toBe(422);
    expect(over.body).toEqual({ errors: [fieldsError(`k${MAX_BODY_KEYS - 1}`)] });
    const patch = await t.req("PATCH", `/api/v1/posts/${ok.body._id}`, { body: manyKeys(MAX_BODY_KEYS + 1) });
    expect(patch.body).toEqual({ errors: [fieldsError(`k${MAX_BODY_KEYS}`)] });
    // Nested objects (json values) are not records: their keys are not counted.
    expect((await t.req("POST", "/api/v1/posts", { body: `{"doc":${manyKeys(2000).replaceAll("null", "1")}}` })).status).toBe(201);
  });

  test("bulk counts per record and names its index; batch names the operation", async () => {
    const bulk = await t.req("POST", "/api/v1/posts/bulk", { body: `[{"title":"a"},${manyKeys(1200)}]` });
    expect(bulk.status).toBe(422);
    expect(bulk.body).toEqual({ errors: [fieldsError("k1000", 1)], index: 1 });
    const fine = await t.req("POST", "/api/v1/posts/bulk", { body: `[${manyKeys(MAX_BODY_KEYS)},${manyKeys(MAX_BODY_KEYS)}]` });
    expect(fine.status).toBe(201);
    const batch = await t.req("POST", "/api/v1/posts/batch", {
      body: `{"operations":[{"op":"create","data":{"title":"a"}},{"op":"create","data":${manyKeys(1001)}}]}`,
    });
    expect(batch.status).toBe(400);
    expect(batch.body).toEqual({
      error: `operation 1 (unknown): a record has at most ${MAX_BODY_KEYS} keys (a collection has at most 500 fields).`,
      code: "batch_failed",
      index: 1,
      op: "unknown",
    });
    expect((await t.req("GET", "/api/v1/posts/count?filter=title:eq:a")).body).toEqual({ total: 0 });
  });

  test("credentials, collection and rule come first: 401, 403 and 404 as without the body", async () => {
    const body = manyKeys(5000);
    expect((await t.req("POST", "/api/v1/members", { body })).status).toBe(401);
    expect((await t.req("POST", "/api/v1/nosuch", { body, token })).status).toBe(404);
    expect((await t.req("POST", "/api/v1/nosuch/bulk", { body: `[${body}]`, token })).status).toBe(404);
    expect((await t.req("POST", "/api/v1/members", { body, token })).status).toBe(422);
  });

  test("any other body's top-level object: 400 past the limit", async () => {
    const login = await t.req("POST", "/api/v1/auth/login", { body: manyKeys(MAX_BODY_KEYS + 1, '"email":"keys@example.com","password":"password123",') });
    expect(login.body).toEqual({ error: `an object of the request body has more than ${MAX_BODY_KEYS} keys`, code: "bad_request" });
    expect((await t.admin("PATCH", "/api/v1/admin/settings", JSON.parse(manyKeys(MAX_BODY_KEYS + 1)))).status).toBe(400);
  });
});

describe("hostile bodies keep the server free", () => {
  test("900,000 null keys (15 MB): each is refused at once, and /health answers while they are in flight", async () => {
    const hostile = manyKeys(900_000, '"title":"x",');
    expect(hostile.length).toBeGreaterThan(13_000_000);
    // The yardstick: parsing the body once, here. Before the limit the server parsed each such body and more.
    let started = performance.now();
    JSON.parse(hostile);
    const parseMs = performance.now() - started;
    // Requests made before the clock starts: encoding 15 MB into a request is the client's work, not the server's.
    const bytes = (text: string) => new TextEncoder().encode(text);
    const requests = ([
      ["/api/v1/posts", bytes(hostile)],
      ["/api/v1/posts/bulk", bytes(`[${hostile}]`)],
      ["/api/v1/posts/batch", bytes(`{"operations":[{"op":"create","data":${hostile}}]}`)],
      ["/api/v1/auth/login", bytes(hostile)],
      ["/api/v1/posts", bytes(hostile)],
      ["/api/v1/posts/bulk", bytes(`[${hostile}]`)],
    ] as const).map(([path, body]) => new Request(`http://localhost${path}`, { method: "POST", body, headers: { "content-type": "application/json" } }));
    const pending = new Set<Promise<unknown>>();
    const answers: { status: number; ms: number }[] = [];
    started = performance.now();
    for (const request of requests) {
      const p: Promise<unknown> = t.app
        .handle(request)
        .then((res) => void answers.push({ status: res.status, ms: performance.now() - started }))
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    // /health, timed again and again while any hostile request is unanswered (the first probe is sure to be).
    const health: number[] = [];
    do {
      const at = performance.now();
      expect((await t.app.handle(new Request("http://localhost/health"))).status).toBe(200);
      health.push(performance.now() - at);
      // A probe answers without I/O: between probes the loop must get to the requests' I/O (PostgreSQL).
      await Bun.sleep(5);
    } while (pending.size && performance.now() - started < 30_000);
    await Promise.all(pending);
    // Relative to parsing one such body, so a busy machine moves both: before the limit, /health waited for
    // several parses and more, and the requests took many times one.
    const bound = Math.max(200, parseMs / 2);
    const slowestHealthMs = Math.max(...health);
    const slowestAnswerMs = Math.max(...answers.map((a) => a.ms));
    // Objects, so that a failure prints the times.
    expect({ slowestHealthMs, parseMs, fast: slowestHealthMs < bound }).toMatchObject({ fast: true });
    expect({ slowestAnswerMs, parseMs, fast: slowestAnswerMs < Math.max(parseMs, 200) * 2 }).toMatchObject({ fast: true });
    expect(answers.map((a) => a.status).sort()).toEqual([400, 400, 422, 422, 422, 422]);
  });
});
