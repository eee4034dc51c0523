import { afterAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";
import pkg from "../../package.json";
import { setPhase } from "../../src/ops/readiness.ts";

const t = createTestApp();
afterAll(() => t.close());

describe("health and unknown routes", () => {
  test("GET /health answers status ok and the package version", async () => {
    const res = await t.req("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok", version: pkg.version });
  });

  test("GET /api/v1/health answers the same", async () => {
    expect((await t.req("GET", "/api/v1/health")).body.status).toBe("ok");
  });

  test("an unknown route is a JSON 404", async () => {
    const res = await t.req("GET", "/nowhere/at/all");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: "not_found" });
  });
});

describe("readiness", () => {
  test("GET /ready and /api/v1/ready: 200 ready once serving with a database that answers; 503 with the reason while starting or stopping, /health 200 throughout", async () => {
    for (const path of ["/ready", "/api/v1/ready"]) {
      const res = await t.req("GET", path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: "ready", version: pkg.version });
    }
    for (const phase of ["starting", "stopping"] as const) {
      setPhase(t.ctx, phase);
      for (const path of ["/ready", "/api/v1/ready"]) {
        const res = await t.req("GET", path);
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("1");
        expect(res.body).toEqual({ error: `the server is ${phase}`, code: "unavailable", reason: phase });
      }
      expect((await t.req("GET", "/health")).status).toBe(200);
    }
    setPhase(t.ctx, "serving");
    expect((await t.req("GET", "/ready")).status).toBe(200);
  });

  test("a collection cannot be named ready (its route would be hidden)", async () => {
    const res = await t.admin("POST", "/api/v1/admin/collections", { name: "ready" });
    expect(res.status).toBe(400);
  });
});
