import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";

// Odd requests to GET /api/v1/:collection/:id without a query string (answered without Elysia's request
// lifecycle when anonymous) answer exactly what the route does: the same path with an empty query
// string ("?") always takes the route.

let t: TestApp;
afterEach(() => t.close());

const headersOf = (res: { headers: Headers }) => {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== "x-request-id") out[k] = v;
  });
  return out;
};

test("letter case, names of other routes, empty Origin or Authorization: the same status, body and headers as the route", async () => {
  t = createTestApp();
  await createCollection(t, "posts", { read: "public", create: "public" });
  const id = (await t.req("POST", "/api/v1/posts", { body: { title: "x" } })).body._id as string;
  const paths = [`/api/v1/posts/${id}`, `/api/v1/POSTS/${id}`, `/api/v1/posts/${id.toLowerCase()}`, "/api/v1/posts/COUNT", "/api/v1/ADMIN/collections", "/api/v1/Auth/me", "/api/v1/admin/x", "/api/v1/realtime/x", "/api/v1/health/x"];
  const variants: Record<string, string>[] = [{}, { origin: "" }, { origin: "null" }, { authorization: "" }];
  for (const path of paths)
    for (const headers of variants) {
      const direct = await t.req("GET", path, { headers });
      const routed = await t.req("GET", `${path}?`, { headers });
      expect({ path, headers, status: direct.status, body: direct.body, h: headersOf(direct) }).toEqual({
        path,
        headers,
        status: routed.status,
        body: routed.body,
        h: headersOf(routed),
      });
    }
  expect((await t.req("GET", `/api/v1/POSTS/${id}`)).body._id).toBe(id);
});
