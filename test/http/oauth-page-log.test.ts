import { afterEach, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// The OAuth result page (served while APP_URL is the server itself) is opened with the login's
// tokens in its address; the request log shows that address with every token value replaced.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

test("the request log of /auth/callback keeps no token of the login: access, refresh and the 2FA step's totp_token", async () => {
  const t = createTestApp({ requestLog: true });
  apps.push(t);
  const html = { accept: "text/html" };
  const success = await t.req("GET", "/auth/callback?access_token=AT-SECRET-1&refresh_token=RT-SECRET-2&expires_in=900", { headers: html });
  expect(success.status).toBe(200);
  const twoFactor = await t.req("GET", "/auth/callback?totp_required=true&totp_token=TT-SECRET-3", { headers: html });
  expect(twoFactor.status).toBe(200);
  expect(t.log.lines.filter((l) => l.msg === "request").map((l) => l.fields!.path)).toEqual([
    "/auth/callback?access_token=***&refresh_token=***&expires_in=900",
    "/auth/callback?totp_required=true&totp_token=***",
  ]);
  expect(JSON.stringify(t.log.lines)).not.toMatch(/SECRET/);
});
