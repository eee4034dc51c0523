import { afterEach, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// An anonymous GET /api/v1/:collection/:id without a query string is answered without Elysia's request
// lifecycle. Each case below is read twice: as is, and with a query parameter that changes nothing
// (`include_deleted=false`), which takes the route as every other request does. Both must give the same
// status, body and headers (all but the request id), and both get an id and a log line.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function headersOf(res: { headers: Headers }) {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== "x-request-id") out[k] = v;
  });
  return out;
}

async function sameBothWays(t: TestApp, path: string, headers: Record<string, string> = {}) {
  const direct = await t.req("GET", path, { headers });
  const routed = await t.req("GET", `${path}?include_deleted=false`, { headers });
  expect({ status: direct.status, body: direct.body, headers: headersOf(direct) }).toEqual({
    status: routed.status,
    body: routed.body,
    headers: headersOf(routed),
  });
  expect(direct.headers.get("x-request-id")).toBeTruthy();
  return direct;
}

async function seeded(env: Record<string, string> = {}) {
  const t = createTestApp({ env, requestLog: true });
  apps.push(t);
  await createCollection(t, "posts", { read: "public", create: "public", update: "public", delete: "public" });
  await createCollection(t, "secrets", { read: "authenticated", create: "public", update: "public", delete: "public" });
  await createCollection(t, "notes", { read: "owner", create: "authenticated", update: "owner", delete: "owner" });
  const post = (await t.req("POST", "/api/v1/posts", { body: { title: "hello", n: 3, tags: ["a", "b"], done: true, meta: { x: 1 } } })).body;
  return { t, post };
}

describe("anonymous read by id without a query string", () => {
  test("a public record: same status, body and headers as through the route, with an id and a log line", async () => {
    const { t, post } = await seeded();
    const res = await sameBothWays(t, `/api/v1/posts/${post._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(post);
    expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const lines = t.log.lines.filter((l) => l.msg === "request" && l.fields?.path === `/api/v1/posts/${post._id}`);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.fields).toMatchObject({ method: "GET", status: 200, request_id: res.headers.get("x-request-id") });
  });

  test("an Origin is echoed as the CORS plugin does; an incoming X-Request-Id is kept", async () => {
    const { t, post } = await seeded();
    const res = await sameBothWays(t, `/api/v1/posts/${post._id}`, { origin: "https://a.example", "x-request-id": "trace-1" });
    expect(res.headers.get("access-control-allow-origin")).toBe("https://a.example");
    expect(res.headers.get("x-request-id")).toBe("trace-1");
  });

  test("missing, soft-deleted, unknown collection, hidden by a rule: the same errors", async () => {
    const { t, post } = await seeded();
    expect((await sameBothWays(t, "/api/v1/posts/01NOSUCHRECORD0000000000000")).status).toBe(404);
    expect((await sameBothWays(t, "/api/v1/nosuch/abc")).status).toBe(404);
    const secret = (await t.req("POST", "/api/v1/secrets", { body: { title: "s" } })).body;
    expect((await sameBothWays(t, `/api/v1/secrets/${secret._id}`)).status).toBe(401);
    const user = await registerUser(t, "owner@example.com");
    const note = (await t.req("POST", "/api/v1/notes", { body: { title: "n" }, token: user.token })).body;
    expect(note._id).toBeString();
    expect((await sameBothWays(t, `/api/v1/notes/${note._id}`)).status).toBe(401);
    expect((await t.req("DELETE", `/api/v1/posts/${post._id}`)).status).toBe(200);
    expect((await sameBothWays(t, `/api/v1/posts/${post._id}`)).status).toBe(404);
  });

  test("paths other GET routes take are theirs: count, aggregate, admin and auth", async () => {
    const { t } = await seeded();
    expect((await sameBothWays(t, "/api/v1/posts/count")).body).toEqual({ total: 1 });
    expect((await sameBothWays(t, "/api/v1/admin/collections")).status).toBe(401);
    expect((await sameBothWays(t, "/api/v1/auth/me")).status).toBe(401);
    expect((await sameBothWays(t, "/api/v1/posts/aggregate")).status).toBe(400);
  });

  test("relation fields are attached as through the route", async () => {
    const { t, post } = await seeded();
    await createCollection(t, "comments", { read: "public", create: "public", update: "public", delete: "public" });
    const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "comments", from_field: "post", to_col: "posts", type: "one", on_delete: "cascade" });
    expect(rel.status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "links", to_col: "comments", type: "many" })).status).toBe(201);
    const c = (await t.req("POST", "/api/v1/comments", { body: { text: "hi", post: post._id } })).body;
    const res = await sameBothWays(t, `/api/v1/comments/${c._id}`);
    expect(res.status).toBe(200);
    expect(res.body.post).toBe(post._id);
    const linked = await t.req("PATCH", `/api/v1/posts/${post._id}`, { body: { links: [c._id] } });
    expect(linked.status).toBe(200);
    expect((await sameBothWays(t, `/api/v1/posts/${post._id}`)).body.links).toEqual([c._id]);
  });

  test("with CORS_ORIGINS as a list, the CORS headers are the list's", async () => {
    const { t, post } = await seeded({ CORS_ORIGINS: "https://app.example" });
    const res = await sameBothWays(t, `/api/v1/posts/${post._id}`, { origin: "https://app.example" });
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(res.headers.get("vary")).toBe("Origin");
  });
});
