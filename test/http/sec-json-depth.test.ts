import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// JSON bodies nested deeper than 64 levels are 400 bad_request before anything is stored; a
// pathological depth (100,000) is the same 400, never a stack overflow answered 500.

let t: TestApp;
let user: string;

const tooDeep = { error: "the JSON body is nested deeper than 64 levels", code: "bad_request" };

/** `{"v": [[…[1]…]]}` with `levels` levels of nesting in all (the outer object counts as one). */
const nested = (levels: number) => `{"v":${"[".repeat(levels - 1)}1${"]".repeat(levels - 1)}}`;

beforeAll(async () => {
  t = createTestApp();
  user = (await registerUser(t, "deep@example.com")).token;
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "docs", rules: { read: "public", create: "public", update: "public" } })).status).toBe(201);
});
afterAll(() => t.close());

const total = async () => (await t.admin("GET", "/api/v1/docs/count?include_deleted=true")).body.total;

describe("JSON nesting depth", () => {
  test("64 levels are accepted and stored as sent", async () => {
    const res = await t.req("POST", "/api/v1/docs", { body: nested(64) });
    expect(res.status).toBe(201);
    expect(JSON.stringify(res.body.v)).toBe(`${"[".repeat(63)}1${"]".repeat(63)}`);
  });

  test("65 levels are 400 bad_request and nothing is stored", async () => {
    const before = await total();
    const res = await t.req("POST", "/api/v1/docs", { body: nested(65) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(tooDeep);
    expect(await total()).toBe(before);
  });

  test("100,000 levels are the same 400 on create, bulk, batch, update, auth and admin routes", async () => {
    const deep = nested(100_000);
    const made = await t.req("POST", "/api/v1/docs", { body: { n: 1 } });
    expect(made.status).toBe(201);
    const id = made.body._id;
    const before = await total();
    const calls: [string, string, string | null][] = [
      ["POST", "/api/v1/docs", null],
      ["POST", "/api/v1/docs/bulk", null],
      ["POST", "/api/v1/docs/batch", null],
      ["PATCH", `/api/v1/docs/${id}`, null],
      ["PATCH", "/api/v1/auth/me", user],
      ["POST", "/api/v1/auth/login", null],
      ["PUT", "/api/v1/admin/collections/docs/rules", "admin"],
    ];
    for (const [method, path, who] of calls) {
      const token = who === "admin" ? "test-admin-secret-0123456789" : who;
      const body = path.endsWith("/bulk") ? `[${deep}]` : deep;
      const res = await t.req(method, path, { body, token });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 400, body: tooDeep });
    }
    expect(await total()).toBe(before);
    expect((await t.req("GET", `/api/v1/docs/${id}`)).body.n).toBe(1);
  });

  test("brackets inside strings (escaped quotes included) do not count as nesting", async () => {
    const text = `\\"${"[{".repeat(200)}`;
    const res = await t.req("POST", "/api/v1/docs", { body: `{"s":"${text}"}` });
    expect(res.status).toBe(201);
    expect(res.body.s).toBe(`"${"[{".repeat(200)}`);
  });

  test("malformed JSON is still 400 invalid_json", async () => {
    const res = await t.req("POST", "/api/v1/docs", { body: '{"v": [1, 2' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
  });
});

describe("keys and values in all of a body", () => {
  const manyKeys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(",")}}`;

  test("a nested object of 700,000 keys is 400 before it is parsed, on an auth route and on a record", async () => {
    const body = `{"email":${manyKeys(700_000)},"password":"x"}`;
    const login = await t.req("POST", "/api/v1/auth/login", { body });
    expect(login.status).toBe(400);
    expect(login.body).toEqual({ error: "the JSON body holds more than 100000 keys in all its objects", code: "bad_request" });
    const before = await total();
    const rec = await t.req("POST", "/api/v1/docs", { body: `{"data":${manyKeys(200_000)}}` });
    expect(rec.status).toBe(400);
    expect(await total()).toBe(before);
  });

  test("16 MiB of empty objects is 400 (at most 250,000 objects and arrays), in a record and in a bulk", async () => {
    const objects = `[${"{},".repeat(2_000_000)}{}]`;
    const before = await total();
    for (const [path, body] of [["/api/v1/docs", `{"v":${objects}}`], ["/api/v1/docs/bulk", objects]] as const) {
      const res = await t.req("POST", path, { body });
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 400,
        body: { error: "the JSON body holds more than 250000 objects and arrays", code: "bad_request" },
      });
    }
    expect(await total()).toBe(before);
  });

  test("values within the limits are stored as sent: a nested object of 50,000 keys, an array of 200,000 arrays", async () => {
    const keys = await t.req("POST", "/api/v1/docs", { body: `{"map":${manyKeys(50_000)}}` });
    expect(keys.status).toBe(201);
    expect(Object.keys(keys.body.map)).toHaveLength(50_000);
    const points = `[${Array.from({ length: 200_000 }, (_, i) => `[${i},${i + 1}]`).join(",")}]`;
    const geo = await t.req("POST", "/api/v1/docs", { body: `{"coordinates":${points}}` });
    expect(geo.status).toBe(201);
    expect(geo.body.coordinates).toHaveLength(200_000);
  });
});
