import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { memoryLogger } from "../../src/log.ts";
import { toErrorResponse } from "../../src/http/plugins/errors.ts";

// A route that lets Elysia check its body, query or params against a TypeBox schema gets CONTRACT §1's
// 400 body from the one error handler, with a message naming the part and the failing property.

const app = new Elysia()
  .onError(({ error, code, request }) => toErrorResponse(error, code, memoryLogger(), request))
  .post("/things", ({ body }) => body, { body: t.Object({ name: t.String(), size: t.Optional(t.Number()) }) })
  .get("/things/:id", ({ query }) => query, { query: t.Object({ limit: t.Numeric() }) });

async function send(method: string, path: string, body?: string) {
  const res = await app.handle(new Request(`http://localhost${path}`, { method, body, headers: body ? { "content-type": "application/json" } : {} }));
  return { status: res.status, body: await res.json() };
}

describe("Elysia schema failures become CONTRACT's 400", () => {
  test.each([
    ["a body that is no object (Elysia reads it as {})", "[1]", 'the request body: "name" must be string'],
    ["a missing property", "{}", 'the request body: "name" must be string'],
    ["a property of the wrong type", '{"name":"a","size":"big"}', 'the request body: "size" must be number'],
  ])("%s", async (_what, body, message) => {
    expect(await send("POST", "/things", body)).toEqual({ status: 400, body: { error: message, code: "bad_request" } });
  });

  test("a query parameter that is not a number names the query string", async () => {
    const res = await send("GET", "/things/1?limit=many");
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
    expect(res.body.error).toStartWith('the query string: "limit"');
  });

  test("a valid body passes", async () => {
    expect(await send("POST", "/things", '{"name":"a","size":2}')).toEqual({ status: 200, body: { name: "a", size: 2 } });
  });
});
