import { afterAll, expect, test } from "bun:test";
import { createTestApp } from "../helpers/app.ts";

const t = createTestApp();
afterAll(() => t.close());

// GET /api/v1/realtime is the event stream: a collection of that name could never be listed.
test.each([["realtime"], ["Realtime"], ["REALTIME"], ["openapi"], ["pg_stats"], ["PG_x"]])(
  "the reserved collection name %p is 400 and creates nothing",
  async (name) => {
    const res = await t.admin("POST", "/api/v1/admin/collections", { name });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringContaining("realtime"), code: "bad_request" });
    expect((await t.admin("GET", `/api/v1/admin/collections/${name}`)).status).toBe(404);
  },
);

test("names that merely start like a reserved one are fine", async () => {
  for (const name of ["realtime_feed", "openapis", "pgx"]) expect((await t.admin("POST", "/api/v1/admin/collections", { name })).status).toBe(201);
});
