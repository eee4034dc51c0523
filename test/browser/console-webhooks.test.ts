import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { adminApiOf, launchBrowser, openConsolePage, TEST_MS } from "../helpers/browser.ts";
import { startReceiver, type Receiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/wait.ts";

// The console's Webhooks screen (add with the secret shown once, the deliveries of one with Retry, remove) and
// Hooks screen (the hook files, a load error after Reload while the previous version stays), in chromium.

const SECRET = "console-webhooks-secret-0123456789";
let dir: string;
let hooksDir: string;
let running: Running;
let browser: Browser;
let receiver: Receiver;
const adminApi = adminApiOf(() => running.url, SECRET);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-console-wh-"));
  hooksDir = join(dir, "hooks");
  mkdirSync(hooksDir);
  writeFileSync(join(hooksDir, "orders.js"), `export default { collection: "orders", beforeCreate(e) { e.data.checked = true; }, onCommit() {} };\n`);
  const config = loadConfig({ data: join(dir, "data"), port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: SECRET, HOOKS_DIR: hooksDir });
  const { loadHooks } = await import("../../src/hooks/load.ts");
  running = await startServer(config, { log: memoryLogger(), hooks: await loadHooks(hooksDir) });
  browser = await launchBrowser();
  // The first attempt of each event is refused, later ones taken.
  receiver = startReceiver((r) => (r.attempt === 1 ? 503 : 200));
  await adminApi("POST", "/admin/collections", { name: "orders", rules: { create: "public", read: "public" } });
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  receiver?.stop();
  await running?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the Webhooks screen", () => {
  test("add a webhook (its secret shown once), see a refused delivery, retry it, then remove the webhook", async () => {
    const { page, errors } = await openConsolePage(browser, running.url, SECRET, "#/webhooks");
    await page.getByRole("heading", { name: "Webhooks" }).waitFor();
    expect(await page.getByText("No webhooks yet.").isVisible()).toBe(true);
    await page.getByLabel("URL").fill(receiver.url);
    await page.getByLabel("Collections").selectOption(["orders"]);
    await page.getByRole("checkbox", { name: "restore" }).uncheck();
    await page.getByRole("button", { name: "Add webhook" }).click();
    const secret = await page.locator("code.secret").innerText();
    expect(secret).toStartWith("whsec_");
    const [hook] = (await adminApi("GET", "/admin/webhooks")).items;
    expect(hook).toMatchObject({ url: receiver.url, collections: ["orders"], actions: ["create", "update", "delete"], secret: "********", enabled: true });
    const row = page.locator("tr", { hasText: receiver.url });
    expect(await row.innerText()).toContain("create, update, delete");

    // A change: its first attempt is refused (503); the attempts are listed with the delivery's state.
    const order = await adminApi("POST", "/orders", { total: 42 });
    await waitFor(() => receiver.answered >= 1, { what: "the first attempt" });
    await waitFor(async () => (await adminApi("GET", `/admin/webhooks/${hook.id}/deliveries`)).items.length >= 1, { what: "the attempt recorded" });
    await row.getByRole("link").click();
    await page.getByRole("heading", { name: "Deliveries" }).waitFor();
    const attempt = page.locator("tbody tr").first();
    await attempt.getByText("HTTP 503").waitFor();
    expect(await attempt.innerText()).toContain(`orders create ${order._id}`);
    expect(await attempt.innerText()).toContain("pending");
    await attempt.getByRole("button", { name: "Retry" }).click();
    await page.locator(".flash .alert.ok", { hasText: "Delivery queued again." }).waitFor();
    await waitFor(() => receiver.got.some((r) => r.attempt === 2), { what: "the retried attempt" });
    await waitFor(async () => (await adminApi("GET", `/admin/webhooks/${hook.id}/deliveries`)).items[0].ok === true, { what: "the retry recorded" });
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator("tbody tr").first().getByText("delivered").waitFor();
    expect(new Set(receiver.got.map((r) => r.eventId)).size).toBe(1);

    // Back to the list: disable, then remove after the confirmation.
    await page.getByRole("link", { name: "← Webhooks" }).click();
    await page.locator("tr", { hasText: receiver.url }).getByRole("button", { name: "Disable" }).click();
    await page.locator("tr", { hasText: receiver.url }).getByText("disabled").waitFor();
    expect((await adminApi("GET", `/admin/webhooks/${hook.id}`)).enabled).toBe(false);
    await page.locator("tr", { hasText: receiver.url }).getByRole("button", { name: "Remove" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await page.getByText("No webhooks yet.").waitFor();
    expect((await adminApi("GET", "/admin/webhooks")).items).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, TEST_MS);
});

describe("the Hooks screen", () => {
  test("lists each hook file with its handlers; Reload with a broken file shows its error and keeps the version before", async () => {
    const { page, errors } = await openConsolePage(browser, running.url, SECRET, "#/hooks");
    const row = page.locator("tr", { hasText: "orders.js" });
    await row.waitFor();
    expect(await row.innerText()).toContain("beforeCreate, onCommit");
    expect(await row.innerText()).toContain("loaded");
    writeFileSync(join(hooksDir, "orders.js"), "export default { collection: ");
    await page.getByRole("button", { name: "Reload hook files" }).click();
    await page.locator(".flash .alert.ok", { hasText: "1 file(s) failed to load" }).waitFor();
    await row.getByText("load error").waitFor();
    expect(await row.innerText()).toContain("orders.js");
    expect(await row.innerText()).toContain("beforeCreate, onCommit");
    // The version before is still in use.
    expect((await adminApi("POST", "/orders", { total: 1 })).checked).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, TEST_MS);
});
