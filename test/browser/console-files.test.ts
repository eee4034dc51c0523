import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { Images } from "../../src/files/images.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { launchBrowser, openRecordingPage, TEST_MS } from "../helpers/browser.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// The console's records browser with a file field (CONTRACT §14): upload through the form, a preview in the
// table (an <img> with a file token), preview and download links in the form, and removing the file.

setDefaultTimeout(TEST_MS);

let server: ServerProcess;
let browser: Browser;

async function adminApi(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return await res.json();
}

beforeAll(async () => {
  server = await spawnServer();
  browser = await launchBrowser();
  await adminApi("POST", "/admin/collections", { name: "docs", fields: [{ name: "title", type: "text" }, { name: "cover", type: "file", mime: ["image/*"] }] });
  await adminApi("POST", "/docs", { title: "with a picture" });
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.cleanup();
});

test("a file is uploaded, previewed and removed in the records browser", async () => {
  const { page, errors } = await openRecordingPage(browser);
  await page.goto(`${server.url}/_/#/collections/docs`);
  await page.getByLabel("Admin secret").fill(ADMIN_SECRET);
  await page.getByLabel("Admin secret").press("Enter");
  await page.locator("header.topbar").waitFor();
  await page.getByRole("link", { name: "Records" }).click();
  const row = page.locator("tr", { hasText: "with a picture" });
  await row.getByRole("button", { name: "Edit" }).click();
  await page.getByRole("button", { name: "Edit as form" }).click();
  const png = await new Images({ width: 60, height: 40, color: 0xcc3355ff }).getBuffer("image/png");
  await page.locator('input[name="file-cover"]').setInputFiles({ name: "pic.png", mimeType: "image/png", buffer: png });
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator("dialog").waitFor({ state: "detached" });
  const thumb = row.locator("img.thumb");
  await thumb.waitFor();
  await page.waitForFunction(() => {
    const img = document.querySelector<HTMLImageElement>("tr img.thumb");
    return !!img && img.complete && img.naturalWidth > 0;
  });
  expect(await thumb.evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight])).toEqual([48, 48]);
  const { items } = await adminApi("GET", "/docs");
  expect(items[0].cover).toMatch(/^[a-z0-9]{10}_pic\.png$/);
  await row.getByRole("button", { name: "Edit" }).click();
  await page.getByRole("button", { name: "Edit as form" }).click();
  const item = page.locator(`li[data-file="${items[0].cover}"]`);
  expect(await item.getByRole("link", { name: "Preview" }).getAttribute("href")).toContain(`/api/v1/files/docs/${items[0]._id}/${items[0].cover}?token=`);
  expect(await item.getByRole("link", { name: "Download" }).getAttribute("href")).toContain("download=1");
  await item.getByLabel(`remove ${items[0].cover}`).check();
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator("dialog").waitFor({ state: "detached" });
  await row.locator(".nullv").first().waitFor();
  expect((await adminApi("GET", "/docs")).items[0].cover).toBeNull();
  expect(errors).toEqual([]);
  void (page as Page);
});
