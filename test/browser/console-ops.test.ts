import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TOTP, URI } from "otpauth";
import type { Browser, Page } from "playwright-core";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { launchBrowser, STEP_MS, TEST_MS } from "../helpers/browser.ts";
import { startSmtpCapture, type SmtpCapture } from "../helpers/smtp.ts";

// The console's operations screens at 1280 px in chromium: wide record tables, empty values,
// relation pickers, the full-text hint, OAuth provider names, mail, backup, a user's sign-in
// security, and admin secret rotation. Each test opens its own page and route.

const SECRET = "console-ops-secret-0123456789";
const STEP = TEST_MS;

let dir: string;
let running: Running;
let smtp: SmtpCapture;
let browser: Browser;

async function adminApi(method: string, path: string, body?: unknown, auth: Record<string, string> = { authorization: `Bearer ${SECRET}` }): Promise<any> {
  const res = await fetch(`${running.url}/api/v1${path}`, {
    method,
    headers: { ...auth, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A fresh 1280 px page logged in to the console of `url` at `hash`; script errors are collected. */
async function consolePage(hash: string, opts: { url?: string; secret?: string } = {}): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  page.setDefaultTimeout(STEP_MS);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && !/Failed to load resource/.test(m.text()) && errors.push(m.text()));
  await page.goto(`${opts.url ?? running.url}/_/${hash}`);
  await page.getByLabel("Admin secret").fill(opts.secret ?? SECRET);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator("main#main").waitFor();
  return { page, errors };
}

const okNotice = (page: Page, text: string) => page.locator(".flash .alert.ok", { hasText: text }).waitFor();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-console-ops-"));
  smtp = await startSmtpCapture();
  const config = loadConfig({ data: join(dir, "data"), port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: SECRET, SMTP_URL: smtp.url, MAIL_FROM: "ops@example.test" });
  running = await startServer(config, { log: memoryLogger() });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await running?.stop();
  await smtp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("records browser", () => {
  test("at 1280 px the actions of a 7-field collection stay on screen, and empty values read a dim null", async () => {
    await adminApi("POST", "/admin/collections", { name: "wide", rules: { read: "public" } });
    const long = "a rather long value that makes the column wide ".repeat(3);
    await adminApi("POST", "/wide", { f1: long, f2: long, f3: long, f4: long, f5: long, f6: long, f7: long });
    const sparse = await adminApi("POST", "/wide", { f1: "only this one" });
    const { page, errors } = await consolePage("#/collections/wide/records");
    const row = page.locator(`tr[data-id="${sparse._id}"]`);
    await row.waitFor();
    for (const r of [page.locator("tbody tr").first(), row]) {
      const edit = r.getByRole("button", { name: "Edit" });
      const box = (await edit.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(1280);
      // Nothing covers the button: a click at its centre reaches it.
      const hit = await page.evaluate(([x, y]) => document.elementFromPoint(x, y)?.closest("button")?.textContent ?? null, [box.x + box.width / 2, box.y + box.height / 2]);
      expect(hit).toBe("Edit");
    }
    // f2..f6 (the fields shown by default) are null on the sparse record: each reads a dim "null".
    expect(await row.locator("[data-null]").count()).toBe(5);
    expect(await row.locator("[data-null]").allTextContents()).toEqual(["null", "null", "null", "null", "null"]);
    // f7 is one column more than shown by default: the Columns button says so.
    expect(await page.getByRole("button", { name: /^Columns/ }).innerText()).toBe("Columns (6 of 7)");
    await row.getByRole("button", { name: "Edit" }).click();
    await page.getByRole("dialog").waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);

  test("a one-relation field gets a record picker that searches the target collection", async () => {
    await adminApi("POST", "/admin/collections", { name: "authors", rules: { read: "public" } });
    await adminApi("POST", "/admin/collections", { name: "books", rules: { read: "public" } });
    await adminApi("POST", "/authors", { name: "Grace Hopper" });
    const ada = await adminApi("POST", "/authors", { name: "Ada Lovelace" });
    await adminApi("POST", "/admin/relations", { from_col: "books", from_field: "author", to_col: "authors", type: "one" });
    const { page, errors } = await consolePage("#/collections/books/records");
    await page.getByRole("button", { name: "New record" }).click();
    await page.getByRole("button", { name: "Edit as form" }).click();
    await page.getByLabel("Search authors for author").fill("Lovelace");
    await page.locator('[data-picker="author"]').getByRole("button", { name: /Ada Lovelace/ }).click();
    expect(await page.getByLabel("author (one → authors: its _id)").inputValue()).toBe(ada._id);
    // Grace was not offered for "Lovelace".
    expect(await page.locator('[data-picker="author"]').innerText()).not.toContain("Grace");
    await page.getByRole("button", { name: "Create" }).click();
    await okNotice(page, "created");
    const { items } = await adminApi("GET", "/books");
    expect(items.map((b: { author: string }) => b.author)).toEqual([ada._id]);
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);

  test("with full-text search off, the search box points to the full-text tab", async () => {
    await adminApi("POST", "/admin/collections", { name: "plain", rules: { read: "public" } });
    const { page, errors } = await consolePage("#/collections/plain/records");
    const hint = page.locator("[data-fts-hint]");
    await hint.waitFor();
    expect(await hint.innerText()).toContain("Search needs the full-text index");
    await hint.getByRole("link").click();
    await page.getByRole("button", { name: "Enable full-text search" }).waitFor();
    expect(page.url()).toEndWith("#/collections/plain/search");
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);
});

describe("settings", () => {
  test("OAuth providers are named GitHub and Google, each with the callback URL to register", async () => {
    const { page, errors } = await consolePage("#/settings");
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    const legends = await page.locator("fieldset[data-provider] legend").allInnerTexts();
    expect(legends).toEqual(["OAuth: GitHub", "OAuth: Google", "OAuth: OpenID Connect"]);
    const text = await page.locator("main").innerText();
    expect(text).not.toContain("Code host");
    expect(text).not.toContain("Portal");
    expect(await page.locator('[data-provider="codehost"] .callback').innerText()).toContain("GitHub");
    expect(await page.locator('[data-callback="portal"]').textContent()).toBe(`${running.url.replace("127.0.0.1", "localhost")}/api/v1/auth/oauth/portal/callback`);
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);

  test("the mail card shows the SMTP server and sends a test mail", async () => {
    const { page, errors } = await consolePage("#/settings");
    const card = page.locator('[data-mail="smtp"]');
    await card.waitFor();
    expect(await card.innerText()).toContain(`SMTP server 127.0.0.1:${new URL(smtp.url).port}`);
    expect(await card.innerText()).toContain("<ops@example.test>");
    await page.getByLabel("Send a test mail to").fill("console-test@example.test");
    await page.getByRole("button", { name: "Send test mail" }).click();
    await okNotice(page, "Test mail sent to console-test@example.test.");
    expect(smtp.to("console-test@example.test").map((m) => m.subject)).toEqual(["Test mail from baas"]);
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);

  test("a backup downloads as a database file", async () => {
    await adminApi("POST", "/admin/collections", { name: "kept" }).catch(() => {});
    await adminApi("POST", "/kept", { v: 1 });
    const { page, errors } = await consolePage("#/settings");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download backup" }).click()]);
    expect(download.suggestedFilename()).toMatch(/^baas-backup-\d{8}-\d{6}\.db$/);
    const file = join(dir, "downloaded.db");
    await download.saveAs(file);
    expect(readFileSync(file).subarray(0, 15).toString()).toBe("SQLite format 3");
    const db = new Database(file, { readonly: true });
    expect(db.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM "kept"').get()!.n).toBeGreaterThan(0);
    db.close();
    await okNotice(page, "downloaded");
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);
});

describe("users", () => {
  test("a user's page shows 2FA, lock, linked accounts and API keys; Reset 2FA and Revoke work", async () => {
    const reg = await adminApi("POST", "/auth/register", { email: "phone-lost@example.test", password: "password123" }, {});
    const auth = { authorization: `Bearer ${reg.access_token}` };
    const setup = await adminApi("POST", "/auth/2fa/setup", undefined, auth);
    const totp = URI.parse(setup.otpauth_url) as TOTP;
    await adminApi("POST", "/auth/2fa/enable", { code: totp.generate() }, auth);
    const key = await adminApi("POST", "/auth/api-keys", { name: "deploy bot" }, auth);

    const { page, errors } = await consolePage(`#/users/${reg.user.id}`);
    const card = page.locator("[data-security]");
    await card.waitFor();
    expect(await card.locator("[data-totp]").getAttribute("data-totp")).toBe("on");
    expect(await card.locator("[data-locked]").innerText()).toBe("not locked");
    expect(await card.innerText()).toContain("Linked accounts");
    await card.locator(`[data-api-key="${key.id}"]`).waitFor();

    await card.getByRole("button", { name: "Reset 2FA" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Reset 2FA" }).click();
    await okNotice(page, "Two-factor authentication is off for phone-lost@example.test.");
    await page.locator('[data-totp="off"]').waitFor();
    expect((await adminApi("GET", "/auth/2fa/status", undefined, auth)).enabled).toBe(false);

    await page.locator(`[data-api-key="${key.id}"]`).getByRole("button", { name: "Revoke" }).click();
    await okNotice(page, 'API key "deploy bot" revoked.');
    await page.locator(`[data-api-key="${key.id}"]`).waitFor({ state: "detached" });
    const probe = await fetch(`${running.url}/api/v1/auth/me`, { headers: { "x-api-key": key.key } });
    expect(probe.status).toBe(401);
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);
});

describe("admin secret rotation", () => {
  test("the console rotates a generated secret, shows the new one once, and logs in again with it", async () => {
    const own = mkdtempSync(join(tmpdir(), "baas-console-rotate-"));
    const server = await startServer(loadConfig({ data: own, port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: "" }), { log: memoryLogger() });
    try {
      const first = server.secret.generated!;
      expect(first).toEqual(expect.any(String));
      const { page, errors } = await consolePage("#/settings", { url: server.url, secret: first });
      await page.getByRole("button", { name: "Rotate admin secret" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click();
      const shown = page.locator('input[name="new_secret"]');
      await shown.waitFor();
      const second = await shown.inputValue();
      expect(second).toMatch(/^baas_admin_/);
      expect(second).not.toBe(first);
      await page.getByRole("button", { name: "Log in again" }).click();
      await page.getByLabel("Admin secret").fill(first);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.locator(".login .alert.error, .alert.error").first().waitFor();
      await page.getByLabel("Admin secret").fill(second);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByRole("heading", { name: "Settings" }).waitFor();
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await server.stop();
      rmSync(own, { recursive: true, force: true });
    }
  }, STEP);
});
