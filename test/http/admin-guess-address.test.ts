import { afterEach, expect, test } from "bun:test";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

let t: LiveApp;
afterEach(() => t.stop());

test("a wrong guess at the admin secret on a data route counts against the client's address", async () => {
  t = createLiveApp();
  const res = await fetch(`${t.base}/api/v1/posts`, { headers: { authorization: "Bearer not-the-admin-secret-at-all" } });
  expect(res.status).toBe(401);
  const rows = await t.ctx.db.all<{ ip: string }>("SELECT ip FROM _admin_attempts");
  expect(rows.map((r) => r.ip)).toEqual(["127.0.0.1"]);
});
