import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { launchBrowser, STEP_MS } from "../helpers/browser.ts";
import { buildBinary } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// The compiled executable carries the console: it runs from an empty directory, with no files beside it.
let server: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  const bin = await buildBinary();
  server = await spawnServer({ cmd: [bin] });
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.cleanup();
});

describe("the console in the compiled binary", () => {
  test("the binary serves the page and its hashed assets with their content types", async () => {
    const res = await fetch(`${server.url}/_/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await res.text();
    const assets = [...html.matchAll(/"(\/_\/assets\/console\.[0-9a-f]{16}\.(js|css))"/g)];
    expect(assets.map((m) => m[2]).sort()).toEqual(["css", "js"]);
    for (const [, path, ext] of assets) {
      const a = await fetch(`${server.url}${path}`);
      expect(a.status).toBe(200);
      expect(a.headers.get("content-type")).toBe(ext === "js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8");
      expect(a.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect((await a.text()).length).toBeGreaterThan(1000);
    }
  }, 20_000);

  test("a browser logs in to the binary's console and sees the collections", async () => {
    await fetch(`${server.url}/api/v1/admin/collections`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "notes" }),
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_MS);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${server.url}/_/`);
    await page.getByLabel("Admin secret").fill(ADMIN_SECRET);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "notes" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 25_000);
});
