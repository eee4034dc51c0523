import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { createCollection } from "../helpers/app.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// Routes of hook files on a listening server (CONTRACT §15), where requests are routed natively: paths shaped
// like the data API's (`/fn/ping` as `/:collection/:id`, `/fn/batch`, `/fn/x/restore`) are the routes', and a
// handler reads the raw body from `request` for a signature check.

const SECRET = "whsec_live_0123456789";
const routes = `
import { createHmac } from "node:crypto";
const echo = ({ request, params }) => ({ method: request.method, params });
export const routes = [
  { method: "GET", path: "/ping", handler: () => ({ pong: true }) },
  { method: "PATCH", path: "/ping", handler: echo },
  { method: "DELETE", path: "/ping", handler: echo },
  { method: "POST", path: "/batch", handler: echo },
  { method: "POST", path: "/bulk", handler: echo },
  { method: "POST", path: "/:id/restore", handler: echo },
  { method: "GET", path: "/orders/:id", handler: echo },
  { method: "GET", path: "/a/b/c", handler: echo },
  {
    method: "POST",
    path: "/signed",
    handler: async ({ request }) => {
      const raw = await request.text();
      const want = createHmac("sha256", ${JSON.stringify(SECRET)}).update(raw).digest("hex");
      if (request.headers.get("x-signature") !== want) throw { status: 401, message: "bad signature" };
      return { ok: true, raw };
    },
  },
];
`;

let t: LiveApp;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-fn-live-"));
  writeFileSync(join(dir, "routes.ts"), routes);
  t = createLiveApp({ context: { hooks: await loadHooks(dir) } });
  // A collection named like nothing here, so the data API routes are live too.
  await createCollection(t, "orders", { read: "public", create: "public", update: "public", delete: "public" });
}, 60_000);
afterAll(async () => {
  await t.stop();
  rmSync(dir, { recursive: true, force: true });
});

const call = async (method: string, path: string, init: RequestInit = {}) => {
  const res = await fetch(`${t.base}/api/v1/fn${path}`, { method, ...init });
  return { status: res.status, body: await res.json() };
};

test("paths shaped like the data API's are the routes' on a listening server", async () => {
  expect(await call("GET", "/ping")).toEqual({ status: 200, body: { pong: true } });
  expect(await call("PATCH", "/ping")).toEqual({ status: 200, body: { method: "PATCH", params: {} } });
  expect(await call("DELETE", "/ping")).toEqual({ status: 200, body: { method: "DELETE", params: {} } });
  expect(await call("POST", "/batch")).toEqual({ status: 200, body: { method: "POST", params: {} } });
  expect(await call("POST", "/bulk")).toEqual({ status: 200, body: { method: "POST", params: {} } });
  expect(await call("POST", "/o1/restore")).toEqual({ status: 200, body: { method: "POST", params: { id: "o1" } } });
  expect(await call("GET", "/orders/o2")).toEqual({ status: 200, body: { method: "GET", params: { id: "o2" } } });
  expect(await call("GET", "/a/b/c")).toEqual({ status: 200, body: { method: "GET", params: {} } });
  const missing = await call("GET", "/nothing");
  expect(missing).toEqual({ status: 404, body: { error: "no such route", code: "not_found" } });
  expect((await call("PUT", "/ping")).status).toBe(405);
  // The data API is still the data API.
  expect((await fetch(`${t.base}/api/v1/orders`)).status).toBe(200);
});

test("a handler reads the raw body from request, byte for byte", async () => {
  const raw = '{ "amount":  1200, "order": "o1" }';
  const sig = createHmac("sha256", SECRET).update(raw).digest("hex");
  const ok = await call("POST", "/signed", { body: raw, headers: { "content-type": "application/json", "x-signature": sig } });
  expect(ok).toEqual({ status: 200, body: { ok: true, raw } });
  const bad = await call("POST", "/signed", { body: raw + " ", headers: { "content-type": "application/json", "x-signature": sig } });
  expect(bad.status).toBe(401);
});
