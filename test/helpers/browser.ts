import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

/**
 * How long one browser step (a click, a wait for an element or a page) may take, and a whole browser
 * test. Generous on purpose: on a quiet machine a step takes milliseconds, and a busy one (the suite run
 * beside others, a load of 10 on 2 cores) must not fail for being slow; a step that never comes still fails.
 */
export const STEP_MS = 30_000;
export const TEST_MS = 120_000;

/** Debian's chromium unless CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

/** Launches headless chromium with a fresh temporary profile; throws (never skips) when it is not installed. */
export async function launchBrowser(): Promise<Browser> {
  // Fail loudly: a missing browser must never turn into a silently passing suite.
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH`);
  // launch() gives the browser a fresh temporary profile (its --user-data-dir) and removes it on close.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}

/** A new page that records the address of every request it makes and every script error. */
export async function openRecordingPage(browser: Browser): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(STEP_MS);
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => errors.push(e.message));
  // A 4xx the page handles (a wrong code) is logged by the browser as a failed resource: not a script error.
  page.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") && errors.push(m.text()));
  return { page, requests, errors };
}

/** Calls the admin API of the server at `url()` with `secret`: the JSON answer, or throws naming the status and body. */
export function adminApiOf(url: () => string, secret: string): (method: string, path: string, body?: unknown) => Promise<any> {
  return async (method, path, body) => {
    const res = await fetch(`${url()}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

/**
 * A fresh page (1280 px wide) logged in to the console of the server at `url` with `secret`, at `hash`; script
 * errors are collected (a 4xx the console handles is logged by the browser as a failed resource: not one).
 */
export async function openConsolePage(
  browser: Browser,
  url: string,
  secret: string,
  hash: string,
  opts: { height?: number; acceptDownloads?: boolean } = {},
): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: opts.height ?? 800 }, acceptDownloads: opts.acceptDownloads });
  page.setDefaultTimeout(STEP_MS);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && !/Failed to load resource/.test(m.text()) && errors.push(m.text()));
  await page.goto(`${url}/_/${hash}`);
  await page.getByLabel("Admin secret").fill(secret);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator("main#main").waitFor();
  return { page, errors };
}
