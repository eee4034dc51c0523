import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { ADMIN_SECRET, createCollection, registerUser } from "../helpers/app.ts";
import { launchBrowser, STEP_MS } from "../helpers/browser.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// The browser's own EventSource, which sends no headers: the stream is opened bare, then bound by a POST.
let t: LiveApp;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  t = createLiveApp();
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.goto(`${t.base}/health`);
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

/** In the page: opens an EventSource, posts the subscriptions with the token, and collects every change event. */
function openInPage(p: Page, token: string, subscriptions: unknown[]) {
  return p.evaluate(
    async ({ token, subscriptions }) => {
      const w = window as unknown as { got: unknown[]; es: EventSource };
      w.got = [];
      const es = new EventSource("/api/v1/realtime");
      w.es = es;
      for (const name of ["create", "update", "delete", "restore"])
        es.addEventListener(name, (e) => w.got.push({ event: name, data: JSON.parse((e as MessageEvent).data), id: (e as MessageEvent).lastEventId }));
      const clientId = await new Promise<string>((resolve) =>
        es.addEventListener("connect", (e) => resolve(JSON.parse((e as MessageEvent).data).client_id), { once: true }),
      );
      const res = await fetch("/api/v1/realtime", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ client_id: clientId, subscriptions }),
      });
      return { status: res.status, body: await res.json() };
    },
    { token, subscriptions },
  );
}

test("a page's EventSource receives the changes its user may read, after binding the stream with fetch", async () => {
  await createCollection(t, "notes", { read: "owner", create: "authenticated" });
  const alice = await registerUser(t, "alice@example.com");
  const bob = await registerUser(t, "bob@example.com");
  const res = await openInPage(page, alice.token, ["notes"]);
  expect(res).toEqual({ status: 200, body: { ok: true, subscriptions: ["notes"] } });
  await t.req("POST", "/api/v1/notes", { token: bob.token, body: { title: "bob's" } });
  const mine = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { title: "alice's" } });
  await t.req("PATCH", `/api/v1/notes/${mine.body._id}`, { token: alice.token, body: { title: "alice's, edited" } });
  await page.waitForFunction(() => (window as unknown as { got: unknown[] }).got.length >= 2, undefined, { timeout: STEP_MS });
  const got = (await page.evaluate(() => (window as unknown as { got: unknown[] }).got)) as { event: string; data: any; id: string }[];
  expect(got.map((g) => [g.event, g.data.record.title])).toEqual([
    ["create", "alice's"],
    ["update", "alice's, edited"],
  ]);
  expect(got[0].data).toEqual({ collection: "notes", action: "create", record: mine.body });
  expect(got[1].id).toBeTruthy();
}, 30_000);

test("the console's records browser updates itself while open when records change elsewhere", async () => {
  await createCollection(t, "board");
  await t.admin("POST", "/api/v1/board", { title: "first" });
  const consolePage = await browser.newPage();
  try {
    await consolePage.goto(`${t.base}/_/`);
    await consolePage.getByLabel("Admin secret").fill(ADMIN_SECRET);
    await consolePage.getByLabel("Admin secret").press("Enter");
    await consolePage.getByRole("heading", { name: "Collections" }).waitFor({ timeout: STEP_MS });
    await consolePage.goto(`${t.base}/_/#/collections/board/records`);
    await consolePage.getByRole("cell", { name: "first" }).waitFor({ timeout: STEP_MS });
    await consolePage.locator(".badge.ok", { hasText: "live" }).waitFor({ timeout: STEP_MS });
    const added = await t.admin("POST", "/api/v1/board", { title: "added elsewhere" });
    await consolePage.getByRole("cell", { name: "added elsewhere" }).waitFor({ timeout: STEP_MS });
    await t.admin("PATCH", `/api/v1/board/${added.body._id}`, { title: "edited elsewhere" });
    await consolePage.getByRole("cell", { name: "edited elsewhere" }).waitFor({ timeout: STEP_MS });
  } finally {
    await consolePage.close();
  }
}, 60_000);
