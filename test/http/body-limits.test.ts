import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { ADMIN_SECRET, createTestApp, registerUser } from "../helpers/app.ts";

// Request bodies: the 16 MiB cap (CONTRACT §1 and §8b) and malformed JSON, through app.handle and a real server.

const MAX = 16 * 1024 * 1024;
const t = createTestApp();
let token: string;
beforeAll(async () => {
  await t.admin("POST", "/api/v1/admin/collections", { name: "blobs", rules: { create: "public" } });
  token = (await registerUser(t, "body@example.com")).token;
});
afterAll(() => t.close());

const TOO_LARGE = { error: "the request body is larger than 16 MiB", code: "payload_too_large" };

/** A JSON object body of exactly `size` bytes. */
function jsonOfSize(size: number): string {
  const head = '{"data":"';
  return head + "x".repeat(size - head.length - 2) + '"}';
}

function streamOf(bytes: number, chunk = 1024 * 1024): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= bytes) return c.close();
      const n = Math.min(chunk, bytes - sent);
      sent += n;
      c.enqueue(new Uint8Array(n).fill(120));
    },
  });
}

describe("body size", () => {
  test("a body of exactly 16 MiB is accepted", async () => {
    const res = await t.req("POST", "/api/v1/blobs", { body: jsonOfSize(MAX) });
    expect(res.status).toBe(201);
    expect(res.body.data.length).toBe(MAX - 11);
  });

  test.each([
    ["POST /:collection", "POST", "/api/v1/blobs"],
    ["PATCH /:collection/:id", "PATCH", "/api/v1/blobs/01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    ["POST /admin/collections", "POST", "/api/v1/admin/collections"],
    ["POST /auth/register", "POST", "/api/v1/auth/register"],
    ["PATCH /auth/me", "PATCH", "/api/v1/auth/me"],
  ])("one byte more is 413 payload_too_large on %s", async (_n, method, path) => {
    const headers: Record<string, string> = { authorization: `Bearer ${path.includes("/admin/") ? ADMIN_SECRET : token}` };
    const res = await t.req(method, path, { body: jsonOfSize(MAX + 1), headers });
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  test("a streamed body without Content-Length is cut off at 16 MiB with the same 413", async () => {
    const req = new Request("http://localhost/api/v1/blobs", { method: "POST", body: streamOf(MAX + 4096), duplex: "half" } as RequestInit);
    const res = await t.app.handle(req);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual(TOO_LARGE);
  });

  test("a declared Content-Length over 16 MiB is refused before the body is read", async () => {
    const req = new Request("http://localhost/api/v1/blobs", {
      method: "POST",
      body: "{}",
      headers: { "content-length": String(MAX + 1) },
    });
    const res = await t.app.handle(req);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual(TOO_LARGE);
  });
});

describe("a real server on port 0", () => {
  let server: Running;
  beforeAll(async () => {
    const config = loadConfig({ data: `${t.dir}/real`, port: 0, host: "127.0.0.1" }, { ADMIN_SECRET });
    server = await startServer(config, { log: memoryLogger() });
    await fetch(`${server.url}/api/v1/admin/collections`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_SECRET}` },
      body: JSON.stringify({ name: "blobs", rules: { create: "public" } }),
    });
  });
  afterAll(async () => server.stop());

  test.each([[17], [80]])("a %d MiB body gets the JSON 413, not Bun's empty one", async (mib) => {
    const res = await fetch(`${server.url}/api/v1/blobs`, { method: "POST", body: jsonOfSize(mib * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual(TOO_LARGE);
  });

  test("the server keeps answering after refusing a large body", async () => {
    const res = await fetch(`${server.url}/api/v1/blobs`, { method: "POST", body: '{"ok":true}' });
    expect(res.status).toBe(201);
  });

  test("malformed JSON is 400 invalid_json over a real connection too", async () => {
    const res = await fetch(`${server.url}/api/v1/blobs`, { method: "POST", body: '{"a":', headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.any(String), code: "invalid_json" });
  });
});
