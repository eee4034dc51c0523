import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";
import { launchBrowser, openRecordingPage } from "../helpers/browser.ts";
import { enableTotp, passCodeForm } from "../helpers/landing-page.ts";
import { buildBinary } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { startSmtpCapture, type SmtpCapture } from "../helpers/smtp.ts";

// Without APP_URL, mail links point at the server itself: the compiled binary serves the pages
// they open. Real mail (captured over SMTP), a real browser, and the pages' own requests only.

let server: ServerProcess;
let smtp: SmtpCapture;
let browser: Browser;
const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };

beforeAll(async () => {
  smtp = await startSmtpCapture();
  const bin = await buildBinary();
  server = await spawnServer({ cmd: [bin], env: { SMTP_URL: smtp.url } });
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.cleanup();
  await smtp?.close();
});

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = { "content-type": "application/json" }) {
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** Waits for a mail to `to` whose link opens `path` (mails may arrive in any order), and returns the link as mailed. */
async function mailedLink(to: string, path: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const links = smtp
      .to(to)
      .map((m) => /https?:\/\/\S+/.exec(m.text)?.[0])
      .filter((l): l is string => !!l && new URL(l).pathname === path);
    if (links.length) {
      // The link is used exactly as mailed; only the host is pinned to the address the server listens on.
      const url = new URL(links[links.length - 1]);
      url.host = new URL(server.url).host;
      return url.toString();
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no mail to ${to} with a link to ${path}`);
}

/** A page that records every request it makes and every script error. */
const openPage = () => openRecordingPage(browser);

function sameOrigin(requests: string[]): void {
  for (const r of requests) expect(new URL(r).origin).toBe(new URL(server.url).origin);
}

describe("mail landing pages in the compiled binary", () => {
  test("the verify-email link verifies the address and says so; the token leaves the address bar; a second visit says the link is used", async () => {
    const reg = await api("POST", "/auth/register", { email: "verify-page@example.test", password: "password123" });
    expect(reg.status).toBe(201);
    const link = await mailedLink("verify-page@example.test", "/auth/verify-email");
    const { page, requests, errors } = await openPage();
    const res = await page.goto(link);
    expect(res!.status()).toBe(200);
    const csp = res!.headers()["content-security-policy"];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(res!.headers()["referrer-policy"]).toBe("no-referrer");
    await page.getByText("Your email address is verified.").waitFor();
    expect(await page.locator("#verified-email").textContent()).toBe("verify-page@example.test");
    expect(page.url()).not.toContain("token=");
    const me = await api("GET", "/auth/me", undefined, { authorization: `Bearer ${reg.body.access_token}` });
    expect(me.body.is_verified).toBe(true);
    sameOrigin(requests);
    expect(errors).toEqual([]);

    await page.goto(link);
    await page.getByText("This link is invalid, has expired or was already used. Ask for a new one.").waitFor();
    await page.close();
  }, 30_000);

  test("the reset-password link shows a form: mismatched passwords are caught, the new password is set and works", async () => {
    await api("POST", "/auth/register", { email: "reset-page@example.test", password: "password123" });
    expect((await api("POST", "/auth/forgot-password", { email: "reset-page@example.test" })).status).toBe(200);
    const link = await mailedLink("reset-page@example.test", "/auth/reset-password");
    const { page, requests, errors } = await openPage();
    await page.goto(link);
    await page.getByLabel("New password").fill("brand-new-pass-1");
    await page.getByLabel("Repeat it").fill("brand-new-pass-2");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("The two passwords differ.").waitFor();
    await page.getByLabel("Repeat it").fill("brand-new-pass-1");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Your password was changed.").waitFor();
    expect(await page.locator("#revoked").textContent()).toBe("1");
    expect((await api("POST", "/auth/login", { email: "reset-page@example.test", password: "password123" })).status).toBe(401);
    expect((await api("POST", "/auth/login", { email: "reset-page@example.test", password: "brand-new-pass-1" })).status).toBe(200);
    sameOrigin(requests);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("the magic link signs in and shows who; with 2FA it asks for the code first", async () => {
    await api("POST", "/auth/register", { email: "magic-page@example.test", password: "password123" });
    await api("POST", "/auth/magic-link", { email: "magic-page@example.test" });
    const { page, requests, errors } = await openPage();
    await page.goto(await mailedLink("magic-page@example.test", "/auth/magic-link"));
    await page.getByText("You are signed in.").waitFor();
    expect(await page.locator("#signed-in-email").textContent()).toBe("magic-page@example.test");

    const u = await api("POST", "/auth/register", { email: "magic-2fa@example.test", password: "password123" });
    const totp = await enableTotp(server.url, u.body.access_token);
    // A verified address: on a never-verified account the first magic link is the first proof of the
    // address and drops the 2FA a pre-registering stranger could have set up.
    const verify = await fetch(`${server.url}/api/v1/admin/users/${u.body.user.id}`, { method: "PATCH", headers: admin, body: JSON.stringify({ is_verified: true }) });
    expect(verify.status).toBe(200);
    await api("POST", "/auth/magic-link", { email: "magic-2fa@example.test" });
    await page.goto(await mailedLink("magic-2fa@example.test", "/auth/magic-link"));
    await passCodeForm(page, totp, "magic-2fa@example.test");
    sameOrigin(requests);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("the app name is shown as text, never as markup; a link without a token says so", async () => {
    const name = `<img src=x onerror="document.title='pwned'">Acme & "Co"`;
    expect((await fetch(`${server.url}/api/v1/admin/settings`, { method: "PATCH", headers: admin, body: JSON.stringify({ app_name: name }) })).status).toBe(200);
    try {
      const { page, requests, errors } = await openPage();
      await page.goto(`${server.url}/auth/verify-email`);
      await page.getByText("This link has no token.", { exact: false }).waitFor();
      expect(await page.locator(".app").textContent()).toBe(name);
      expect(await page.locator("main img").count()).toBe(0);
      expect(await page.title()).toBe(`Verify your email · ${name}`);
      sameOrigin(requests);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await fetch(`${server.url}/api/v1/admin/settings`, { method: "PATCH", headers: admin, body: JSON.stringify({ app_name: "baas" }) });
    }
  }, 30_000);

  test("the JSON API is unchanged: a JSON client gets the 404 it got before, and POST on the page paths is not a page", async () => {
    const res = await fetch(`${server.url}/auth/verify-email?token=abc`, { headers: { accept: "application/json" } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "no such endpoint", code: "not_found" });
    const post = await fetch(`${server.url}/auth/reset-password`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(post.status).toBe(404);
    expect((await api("POST", "/auth/verify-email", { token: "nope" })).body).toEqual({ error: expect.any(String), code: "invalid_token" });
  });
});

describe("with a frontend of its own (APP_URL set elsewhere)", () => {
  test("the server serves no pages there: the paths stay 404", async () => {
    const t = createTestApp({ env: { APP_URL: "https://app.example.test" } });
    try {
      for (const path of ["/auth/verify-email?token=x", "/auth/reset-password?token=x", "/auth/magic-link?token=x"]) {
        const res = await t.req("GET", path, { headers: { accept: "text/html" } });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: "no such endpoint", code: "not_found" });
      }
    } finally {
      await t.close();
    }
  });
});
