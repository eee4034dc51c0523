import { afterEach, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// CORS headers on every answer (routes, errors, unknown routes, preflights), for the default
// CORS_ORIGINS=* and for a list of origins.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

const ALLOW_HEADERS = "Content-Type, Authorization, X-Admin-Token, X-API-Key, X-Request-Id, If-Match, If-None-Match, Idempotency-Key, Last-Event-ID";
const EXPOSE = "Retry-After, WWW-Authenticate, X-Request-Id, ETag";
const METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";

async function corsHeaders(t: TestApp, method: string, path: string, headers: Record<string, string> = {}) {
  const res = await t.app.handle(new Request(`http://localhost${path}`, { method, headers }));
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k.startsWith("access-control-") || k === "vary") out[k] = v;
  });
  return { status: res.status, headers: out };
}

const PREFLIGHT = { "access-control-request-method": "POST", "access-control-request-headers": "content-type" };

describe("CORS_ORIGINS=* (the default)", () => {
  const base = { "access-control-allow-headers": ALLOW_HEADERS, "access-control-expose-headers": EXPOSE, vary: "*" };
  test.each([
    ["GET", "/health", {}, 200, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "*" }],
    ["GET", "/health", { origin: "https://a.example" }, 200, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "https://a.example" }],
    ["GET", "/api/v1/nope", { origin: "https://a.example" }, 404, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "https://a.example" }],
    ["GET", "/api/v1/admin/collections", { origin: "https://a.example" }, 401, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "https://a.example" }],
    ["POST", "/api/v1/auth/login", { origin: "https://a.example", "content-type": "application/json" }, 400, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "https://a.example" }],
    ["OPTIONS", "/api/v1/posts", { origin: "https://a.example", ...PREFLIGHT }, 204, { ...base, "access-control-allow-methods": METHODS, "access-control-allow-origin": "https://a.example", "access-control-max-age": "600" }],
    ["OPTIONS", "/api/v1/posts", { origin: "https://a.example" }, 204, { ...base, "access-control-allow-origin": "https://a.example", "access-control-max-age": "600" }],
    ["OPTIONS", "/api/v1/posts", {}, 204, { ...base, "access-control-allow-origin": "*", "access-control-max-age": "600" }],
  ] as const)("%s %s %j → %d with the CORS headers", async (method, path, headers, status, expected) => {
    const t = createTestApp();
    apps.push(t);
    expect(await corsHeaders(t, method, path, headers)).toEqual({ status, headers: expected });
  });
});

describe("CORS_ORIGINS as a list", () => {
  const base = { "access-control-allow-credentials": "true", "access-control-allow-headers": ALLOW_HEADERS, "access-control-expose-headers": EXPOSE };
  const listed = { ...base, "access-control-allow-methods": METHODS, vary: "Origin" };
  test.each([
    ["https://app.example, other.example", "GET", {}, 200, listed],
    ["https://app.example, other.example", "GET", { origin: "https://app.example" }, 200, { ...listed, "access-control-allow-origin": "https://app.example" }],
    ["https://app.example, other.example", "GET", { origin: "https://other.example" }, 200, { ...listed, "access-control-allow-origin": "https://other.example" }],
    ["https://app.example, other.example", "GET", { origin: "https://evil.example" }, 200, listed],
    ["https://app.example, other.example", "OPTIONS", { origin: "https://app.example", ...PREFLIGHT }, 204, { ...listed, "access-control-allow-origin": "https://app.example", "access-control-max-age": "600" }],
    ["https://app.example, other.example", "OPTIONS", { origin: "https://evil.example", ...PREFLIGHT }, 204, { ...listed, "access-control-max-age": "600" }],
    ["https://app.example, other.example", "OPTIONS", {}, 204, { ...base, vary: "Origin", "access-control-max-age": "600" }],
    ["https://app.example,*", "GET", { origin: "https://evil.example" }, 200, { ...listed, vary: "*", "access-control-allow-origin": "*" }],
    ["https://app.example,*", "OPTIONS", { origin: "https://app.example" }, 204, { ...base, vary: "*", "access-control-allow-origin": "*", "access-control-max-age": "600" }],
  ] as const)("CORS_ORIGINS=%s: %s %j → %d with the CORS headers", async (origins, method, headers, status, expected) => {
    const t = createTestApp({ env: { CORS_ORIGINS: origins } });
    apps.push(t);
    expect(await corsHeaders(t, method, "/health", headers)).toEqual({ status, headers: expected });
  });
});
