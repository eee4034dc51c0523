import { afterAll, describe, expect, test } from "bun:test";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// On PostgreSQL there is no database file to download (CONTRACT §11): the backup endpoint names the
// tool that copies a PostgreSQL database, as `baas backup` does. SQLite's download: admin-ops.test.ts.
describe.skipIf(!onPostgres)("GET /admin/backup on PostgreSQL", () => {
  const t = createTestApp();
  afterAll(() => t.close());

  test("is 400 bad_request naming pg_dump, and sends no file", async () => {
    const res = await t.req("GET", "/api/v1/admin/backup", { token: ADMIN_SECRET });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringContaining("pg_dump"), code: "bad_request" });
    expect(res.headers.get("content-disposition")).toBeNull();
  });

  test("still needs admin credentials first", async () => {
    expect((await t.req("GET", "/api/v1/admin/backup")).status).toBe(401);
  });
});
