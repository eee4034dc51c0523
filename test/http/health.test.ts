import { afterAll, describe, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";
import pkg from "../../package.json";

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
