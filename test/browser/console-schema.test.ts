import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { adminApiOf, launchBrowser, openConsolePage } from "../helpers/browser.ts";

// The console's field editor (add, rename, change of type with the 409's count, drop naming the data lost) and
// its schema page (export as a file, import with a previewed plan) in chromium.

const SECRET = "console-schema-secret-0123456789";
const STEP = 30_000;

let dir: string;
let running: Running;
let browser: Browser;

const adminApi = adminApiOf(() => running.url, SECRET);

const consolePage = (hash: string) => openConsolePage(browser, running.url, SECRET, hash, { height: 860, acceptDownloads: true });

const okNotice = (page: Page, text: string) => page.locator(".flash .alert.ok", { hasText: text }).waitFor();
const fieldNames = async () => (await adminApi("GET", "/admin/collections/shop")).fields.map((f: { name: string; type: string }) => `${f.name}:${f.type}`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-console-schema-"));
  const config = loadConfig({ data: join(dir, "data"), port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: SECRET });
  running = await startServer(config, { log: memoryLogger() });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await running?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("field editor", () => {
  test("adds, renames, changes a type (showing how many values would not convert) and drops a field after naming the data lost", async () => {
    await adminApi("POST", "/admin/collections", { name: "shop", fields: [{ name: "title", type: "text" }, { name: "price", type: "text" }] });
    await adminApi("POST", "/shop/bulk", [{ title: "a", price: "12" }, { title: "b", price: "twelve" }, { price: "3" }]);
    const { page, errors } = await consolePage("#/collections/shop/schema");
    const form = page.getByRole("form", { name: "New field" });
    await form.getByLabel("Name").fill("stock");
    await form.getByLabel("Type").selectOption("number");
    await form.getByRole("button", { name: "Add field" }).click();
    await okNotice(page, "Field stock added");
    expect(await fieldNames()).toEqual(["title:text", "price:text", "stock:number"]);

    await page.getByRole("button", { name: "Rename title" }).click();
    await page.getByRole("dialog").getByLabel("New name").fill("name");
    await page.getByRole("dialog").getByRole("button", { name: "Rename" }).click();
    await okNotice(page, "renamed to name");
    expect(await fieldNames()).toEqual(["name:text", "price:text", "stock:number"]);

    await page.getByRole("button", { name: "Change the type of price" }).click();
    await page.getByRole("dialog").getByLabel("New type").selectOption("number");
    await page.getByRole("dialog").getByRole("button", { name: "Change type" }).click();
    await page.getByRole("dialog").locator(".alert.error", { hasText: "1 value of price cannot be converted to number: nothing was changed." }).waitFor();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect(await fieldNames()).toEqual(["name:text", "price:text", "stock:number"]);

    await page.getByRole("button", { name: "Drop name" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("the values stored in 2 records").waitFor();
    await dialog.getByLabel("Type name to confirm").fill("name");
    await dialog.getByRole("button", { name: "Drop field" }).click();
    await okNotice(page, "Field name dropped");
    expect(await fieldNames()).toEqual(["price:text", "stock:number"]);
    await page.locator(".fields-table code", { hasText: "stock" }).waitFor();
    expect(await page.locator(".fields-table").innerText()).not.toContain("name\t");
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);
});

describe("schema page", () => {
  test("exports the schema as a file, and imports one: the plan first, then applied on confirmation", async () => {
    await adminApi("POST", "/admin/collections", { name: "notes", fields: [{ name: "body", type: "text" }] });
    const { page, errors } = await consolePage("#/schema");
    await page.getByRole("heading", { name: "Schema" }).waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download schema.json" }).click()]);
    expect(download.suggestedFilename()).toBe("schema.json");
    const file = join(dir, "schema.json");
    await download.saveAs(file);
    const exported = JSON.parse(readFileSync(file, "utf8"));
    expect(exported).toEqual(await adminApi("GET", "/admin/schema"));

    const next = structuredClone(exported);
    next.collections.push({ name: "labels", fields: [{ name: "text", type: "text" }] });
    next.collections.find((c: { name: string }) => c.name === "notes").fields.push({ name: "pinned", type: "boolean" });
    await page.getByLabel("Or paste it").fill(JSON.stringify(next));
    await page.getByRole("button", { name: "Preview changes" }).click();
    await page.locator(".plan", { hasText: "create_collection" }).waitFor();
    expect(await page.locator(".plan").innerText()).toContain("add_field");
    expect((await adminApi("GET", "/admin/collections")).items.map((c: { name: string }) => c.name)).not.toContain("labels");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await page.getByRole("dialog").getByText("Apply 2 changes?").waitFor();
    await page.getByRole("dialog").getByRole("button", { name: "Apply" }).click();
    await okNotice(page, "Applied 2 changes");
    expect((await adminApi("GET", "/admin/collections")).items.map((c: { name: string }) => c.name)).toContain("labels");
    expect((await adminApi("GET", "/admin/collections/notes")).fields.map((f: { name: string }) => f.name)).toEqual(["body", "pinned"]);
    expect(errors).toEqual([]);
    await page.close();
  }, STEP);
});
