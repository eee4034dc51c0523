import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { launchBrowser, openRecordingPage } from "../helpers/browser.ts";

// The console's API reference (#/api) in chromium: it renders every operation of the server's
// OpenAPI document, grouped by tag, and loads nothing from another host.

const SECRET = "api-reference-secret-0123456789";
let dir: string;
let running: Running;
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-api-ref-"));
  running = await startServer(loadConfig({ data: join(dir, "data"), port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: SECRET }), { log: memoryLogger() });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await running?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the API reference page of the console", () => {
  test("lists every operation of the document by tag, opens one, and requests nothing from another host", async () => {
    const doc = await (await fetch(`${running.url}/api/v1/openapi.json`)).json();
    const operations = Object.values<Record<string, unknown>>(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    const { page, requests, errors } = await openRecordingPage(browser);
    await page.goto(`${running.url}/_/#/api`);
    await page.getByLabel("Admin secret").fill(SECRET);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "API reference" }).waitFor();
    expect(await page.locator("details.api-op").count()).toBe(operations);
    for (const tag of ["records", "auth", "admin", "realtime"]) await page.getByRole("heading", { name: tag, exact: true }).waitFor();

    const login = page.locator("details.api-op", { hasText: "/api/v1/auth/login" }).first();
    await login.locator("summary").click();
    await login.getByText("Body: Credentials").waitFor();
    await login.getByText("→ LoginResultBody").waitFor();
    expect(await page.locator("#schema-RecordBody").count()).toBe(1);
    expect(await page.getByRole("link", { name: "API", exact: true }).getAttribute("aria-current")).toBe("page");

    const origin = new URL(running.url).origin;
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:"))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
