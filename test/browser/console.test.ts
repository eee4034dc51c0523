import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { adminApiOf, launchBrowser, STEP_MS, TEST_MS } from "../helpers/browser.ts";
import { startServer, type Running } from "../../src/server.ts";

// The console is tested in a real browser: Debian's chromium, driven by playwright-core.
const SECRET = "console-test-secret-0123456789";
const PUBLIC_URL = "https://baas.example.test";

// One browser for the file; every test gets its own server on a fresh data dir and its own browser context and page.
let shotsDir: string;
let shots: string;
let browser: Browser;
let dir: string;
let running: Running;
let context: BrowserContext;
let page: Page;
let pageErrors: string[] = [];

/** Calls the admin API directly, to check what the console did. */
const adminApi = adminApiOf(() => running.url, SECRET);

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

// Bun kills child processes (the browser) when a test times out, so each step gets room beyond playwright's own timeout.
const STEP = TEST_MS;

/** Waits for a success notice containing `text`. */
const okNotice = (text: string) => page.locator(".flash .alert.ok", { hasText: text }).waitFor();
/** Waits for an error, in the open dialog, on the page or on the login form, containing `text`. */
const errorNotice = (text: string | RegExp) =>
  page.locator("dialog[open] .alert.error, .flash .alert.error, .login .alert.error", { hasText: text }).waitFor();

beforeAll(async () => {
  shotsDir = mkdtempSync(join(tmpdir(), "baas-console-shots-"));
  shots = process.env.CONSOLE_SCREENSHOTS || shotsDir;
  mkdirSync(shots, { recursive: true });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  if (shotsDir) rmSync(shotsDir, { recursive: true, force: true });
});

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "baas-console-"));
  const config = loadConfig({ data: join(dir, "data"), port: 0, host: "127.0.0.1" }, { ADMIN_SECRET: SECRET, PUBLIC_URL });
  running = await startServer(config, { log: memoryLogger() });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !/Failed to load resource/.test(msg.text())) pageErrors.push(msg.text());
  });
});

afterEach(async () => {
  await context?.close().catch(() => {});
  await running?.stop();
  rmSync(dir, { recursive: true, force: true });
  // Every test's page must have run without script errors.
  expect(pageErrors).toEqual([]);
});

/** Opens the console at `route` (a hash such as "#/users"), logs in with the secret and stays on that route. */
async function loginAt(route = "#/collections") {
  await page.goto(`${running.url}/_/${route}`);
  await page.getByLabel("Admin secret").fill(SECRET);
  await page.getByLabel("Admin secret").press("Enter");
  await page.locator("header.topbar").waitFor();
}

const RECORDS = [
  { title: "Hello world", n: 1 },
  { title: "Second post", n: 2 },
  { title: "Third post", n: 30 },
];
const TITLE_RULE = [{ field: "title", required: true, min: 3 }];
/** The posts collection (public create, by default a required title of at least 3 characters) with `records`, opened in the console. */
async function openPosts(records = RECORDS, fieldRules: unknown[] = TITLE_RULE) {
  await adminApi("POST", "/admin/collections", { name: "posts", rules: { create: "public" } });
  await adminApi("PUT", "/admin/collections/posts/rules", { field_rules: fieldRules });
  for (const rec of records) await adminApi("POST", "/posts", rec);
  await loginAt("#/collections/posts");
  await page.getByRole("heading", { name: "posts", exact: true }).waitFor();
}

/** Registers ann@example.com through the API and returns her access token. */
async function registerAnn(): Promise<string> {
  const reg = await fetch(`${running.url}/api/v1/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ann@example.com", password: "password123" }),
  });
  expect(reg.status).toBe(201);
  return (await reg.json()).access_token;
}

/** Opens ann's user page in the console. */
async function openAnn() {
  await loginAt("#/users");
  await page.getByLabel("Search users by email").fill("ann@");
  await page.getByLabel("Search users by email").press("Enter");
  await page.getByRole("link", { name: "ann@example.com" }).click();
  await page.getByRole("heading", { name: "ann@example.com" }).waitFor();
}

describe("admin console in a real browser", () => {
  test("the console loads from /_/ and asks for the admin secret", async () => {
    const res = await page.goto(`${running.url}/_/`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()["cache-control"]).toBe("no-cache");
    await expect(page.getByLabel("Admin secret").isVisible()).resolves.toBe(true);
    await shot("01-login");
  }, STEP);

  test("a wrong secret shows the server's error message", async () => {
    await page.goto(`${running.url}/_/`);
    await page.getByLabel("Admin secret").fill("not-the-secret");
    await page.getByRole("button", { name: "Log in" }).click();
    await errorNotice("invalid admin credentials");
  }, STEP);

  test("logging in keeps an admin token in sessionStorage, never the secret", async () => {
    await page.goto(`${running.url}/_/`);
    await page.getByLabel("Admin secret").fill(SECRET);
    await page.getByLabel("Admin secret").press("Enter");
    await page.getByRole("heading", { name: "Collections" }).waitFor();
    const stored = await page.evaluate(() => Object.entries(sessionStorage));
    expect(stored.some(([k, v]) => k === "baas.admin.token" && v.split(".").length === 3)).toBe(true);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    const local = await page.evaluate(() => JSON.stringify(localStorage));
    expect(local).not.toContain(SECRET);
  }, STEP);

  test("an invalid collection name shows the API's 400 message in the dialog", async () => {
    await loginAt();
    await page.getByRole("button", { name: "New collection" }).click();
    await page.getByLabel("Name", { exact: true }).fill("1posts");
    await page.getByRole("button", { name: "Create" }).click();
    await errorNotice('invalid collection name "1posts"');
    await page.keyboard.press("Escape");
    await page.locator("dialog").waitFor({ state: "detached" });
  }, STEP);

  test("creating a collection opens its page", async () => {
    await loginAt();
    await page.getByRole("button", { name: "New collection" }).click();
    await page.getByLabel("Name", { exact: true }).fill("posts");
    await page.locator('dialog select[data-rule="create"]').selectOption("public");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { name: "posts", exact: true }).waitFor();
    const col = await adminApi("GET", "/admin/collections/posts");
    expect(col.rules.create).toBe("public");
  }, STEP);

  test("an access rule is set from the rules editor", async () => {
    await openPosts();
    await page.getByRole("link", { name: "Access rules" }).click();
    await page.locator('select[data-rule="update"]').selectOption("role");
    await page.getByLabel("update role name").fill("editor");
    await page.getByRole("button", { name: "Save rules" }).click();
    await okNotice("Access rules saved.");
    const col = await adminApi("GET", "/admin/collections/posts");
    expect(col.rules).toEqual({ read: "public", create: "public", update: { role: "editor" }, delete: "owner" });
    await shot("03-rules");
  }, STEP);

  test("an expression rule shows as itself in the rules editor, stays when another rule is saved, and can be set", async () => {
    await openPosts();
    const expression = "title != null && _owner_id = @auth.id";
    await adminApi("PUT", "/admin/collections/posts/rules", { rules: { read: expression } });
    await page.reload();
    await page.getByRole("link", { name: "Access rules" }).click();
    await expect(page.locator('select[data-rule="read"]').inputValue()).resolves.toBe("expression");
    await expect(page.getByLabel("read rule expression").inputValue()).resolves.toBe(expression);
    await page.locator('select[data-rule="delete"]').selectOption("disabled");
    await page.getByRole("button", { name: "Save rules" }).click();
    await okNotice("Access rules saved.");
    expect((await adminApi("GET", "/admin/collections/posts")).rules).toEqual({ read: expression, create: "public", update: "owner", delete: "disabled" });
    await page.locator('select[data-rule="update"]').selectOption("expression");
    await page.getByLabel("update rule expression").fill("@auth.roles ?= 'editor'");
    await page.getByRole("button", { name: "Save rules" }).click();
    await okNotice("Access rules saved.");
    expect((await adminApi("GET", "/admin/collections/posts")).rules.update).toBe("@auth.roles ?= 'editor'");
    // Checked as one types, by the server's parser: the message names the token and its position.
    const update = page.getByLabel("update rule expression");
    const verdict = page.locator('[data-rule-check="update"]');
    await update.fill("staus = 1");
    await page.waitForFunction(() => document.querySelector('[data-rule-check="update"]')?.textContent?.includes("unknown field 'staus' at 1"));
    expect(await update.getAttribute("aria-invalid")).toBe("true");
    await update.fill("_owner_id = @auth.id || @auth.roles ?= 'editor'");
    await page.waitForFunction(() => document.querySelector('[data-rule-check="update"]')?.textContent === "valid");
    expect(await verdict.getAttribute("class")).toContain("ok");
    // Examples to pick from: the input's suggestions.
    const examples = await page.evaluate(() => {
      const input = document.querySelector('input[name="expression-read"]') as HTMLInputElement;
      return [...(input.list?.options ?? [])].map((o) => o.value);
    });
    expect(examples).toContain("status = 'published' || _owner_id = @auth.id");
    expect((await adminApi("GET", "/admin/collections/posts")).rules.update).toBe("@auth.roles ?= 'editor'");
  }, STEP);

  test("a field rule is set from the field rules editor", async () => {
    await openPosts([], []);
    await page.getByRole("link", { name: "Field rules" }).click();
    await page.getByRole("button", { name: "Add field rule" }).click();
    const row = page.locator("tr.field-rule").last();
    await row.getByLabel("Field").fill("title");
    await row.getByLabel("Required").check();
    await row.getByLabel("min").fill("3");
    await page.getByRole("button", { name: "Save field rules" }).click();
    await okNotice("Field rules saved.");
    const col = await adminApi("GET", "/admin/collections/posts");
    expect(col.field_rules).toEqual([{ field: "title", required: true, min: 3 }]);
  }, STEP);

  test("a bad field rule shows the API's 400 message", async () => {
    await openPosts([]);
    await page.getByRole("link", { name: "Field rules" }).click();
    await page.getByRole("button", { name: "Add field rule" }).click();
    const row = page.locator("tr.field-rule").last();
    await row.getByLabel("Field").fill("body");
    await row.getByLabel("Regex").fill("([");
    await page.getByRole("button", { name: "Save field rules" }).click();
    await errorNotice(/regex|pattern/i);
    await row.getByLabel("Regex").fill("");
  }, STEP);

  test("records are created as JSON, and a failed validation shows its message", async () => {
    await openPosts([]);
    await page.getByRole("link", { name: "Records" }).click();
    for (const rec of [{ title: "Hello world", n: 1 }, { title: "Second post", n: 2 }, { title: "Third one", n: 3 }]) {
      await page.getByRole("button", { name: "New record" }).click();
      await page.getByLabel("Fields (JSON object)").fill(JSON.stringify(rec));
      await page.getByRole("button", { name: "Create" }).click();
      await page.locator("dialog").waitFor({ state: "detached" });
      await page.locator("td", { hasText: rec.title }).waitFor();
    }
    await page.getByRole("button", { name: "New record" }).click();
    await page.getByLabel("Fields (JSON object)").fill('{"title": "ab"}');
    await page.getByRole("button", { name: "Create" }).click();
    await errorNotice('"title" must be at least 3 characters.');
    await page.getByLabel("Fields (JSON object)").fill("{not json");
    await page.getByRole("button", { name: "Create" }).click();
    await errorNotice("not valid JSON");
    await page.keyboard.press("Escape");
    expect((await adminApi("GET", "/admin/collections/posts/stats")).row_count).toBe(3);
    await shot("04-records");
  }, STEP);

  test("editing a record as JSON saves it", async () => {
    await openPosts();
    await page.locator("tr", { hasText: "Third post" }).getByRole("button", { name: "Edit" }).click();
    const text = page.getByLabel("Fields (JSON object)");
    expect(JSON.parse(await text.inputValue())).toEqual({ title: "Third post", n: 30 });
    await text.fill('{"title": "Third one", "n": 3}');
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("td", { hasText: "Third one" }).waitFor();
    const { items } = await adminApi("GET", "/posts?filter=title:eq:Third%20one");
    expect(items).toMatchObject([{ title: "Third one", n: 3 }]);
  }, STEP);

  test("editing a record with the form saves typed values", async () => {
    await openPosts();
    await page.locator("tr", { hasText: "Third post" }).getByRole("button", { name: "Edit" }).click();
    await page.getByRole("button", { name: "Edit as form" }).click();
    await expect(page.getByLabel("title (text)", { exact: true }).inputValue()).resolves.toBe("Third post");
    await page.getByLabel("n (number)", { exact: true }).fill("31");
    await page.getByRole("button", { name: "Edit as JSON" }).click();
    expect(JSON.parse(await page.getByLabel("Fields (JSON object)").inputValue())).toEqual({ title: "Third post", n: 31 });
    await page.getByRole("button", { name: "Edit as form" }).click();
    await page.getByLabel("n (number)", { exact: true }).fill("32");
    await page.getByRole("button", { name: "Save" }).click();
    await okNotice("saved");
    await page.locator("tr", { hasText: "Third post" }).locator("td", { hasText: /^32$/ }).waitFor();
    const { items } = await adminApi("GET", "/posts?filter=title:eq:Third%20post");
    expect(items).toMatchObject([{ title: "Third post", n: 32 }]);
  }, STEP);

  test("a filter narrows the records and a sort orders them", async () => {
    await openPosts();
    await page.getByRole("button", { name: "Add filter" }).click();
    const row = page.locator(".filter-row").last();
    await row.getByLabel("Filter field").selectOption("n");
    await row.getByLabel("Filter operator").selectOption("gt");
    await row.getByLabel("Filter value").fill("1");
    await page.getByLabel("Sort by").selectOption("n");
    await page.getByLabel("Sort direction").selectOption("desc");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("Page 1 · 2 matching").waitFor();
    const titles = await page.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => tr.children[1]?.textContent));
    expect(titles).toEqual(["Third post", "Second post"]);
    await shot("04b-filter");
    await row.getByLabel("Filter value").fill("abc");
    await page.getByRole("button", { name: "Apply" }).click();
    await errorNotice(/"n"|number/);
    await row.getByRole("button", { name: "×" }).click();
    await page.getByLabel("Sort by").selectOption("");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("Page 1 · 3 matching").waitFor();
  }, STEP);

  test("full-text search is enabled from its tab and then searches the records", async () => {
    await openPosts();
    await page.getByRole("link", { name: "Full-text search" }).click();
    await page.locator('[data-fts="disabled"]').waitFor();
    await page.getByRole("button", { name: "Enable full-text search" }).click();
    await okNotice("Full-text search enabled.");
    await page.locator('[data-fts="enabled"]').waitFor();
    expect(await adminApi("GET", "/admin/collections/posts/fts")).toMatchObject({ enabled: true, fields: ["title"], indexed_records: 3 });
    await page.getByRole("link", { name: "Records" }).click();
    await page.getByLabel("Full-text search").fill("third");
    await page.getByLabel("Full-text search").press("Enter");
    await page.getByText("Page 1 · 1 matching").waitFor();
    await expect(page.locator("tbody tr").count()).resolves.toBe(1);
    await page.getByLabel("Full-text search").fill("");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("Page 1 · 3 matching").waitFor();
  }, STEP);

  test("an index is created and dropped from the indexes tab", async () => {
    await openPosts();
    await page.getByRole("link", { name: "Indexes" }).click();
    await page.getByLabel("Fields (comma-separated, in order)").fill("n");
    await page.getByLabel("Unique").check();
    await page.getByRole("button", { name: "Create index" }).click();
    await okNotice("created");
    const { items } = await adminApi("GET", "/admin/collections/posts/indexes");
    expect(items).toMatchObject([{ fields: ["n"], unique: true }]);
    await page.locator("tr", { hasText: items[0].name }).waitFor();
    await page.getByLabel("Fields (comma-separated, in order)").fill("nope");
    await page.getByRole("button", { name: "Create index" }).click();
    await errorNotice("nope");
    await page.locator("tr", { hasText: items[0].name }).getByRole("button", { name: "Drop" }).click();
    await page.getByRole("button", { name: "Drop index" }).click();
    await okNotice("dropped");
    expect((await adminApi("GET", "/admin/collections/posts/indexes")).items).toEqual([]);
    await page.getByRole("link", { name: "Records" }).click();
  }, STEP);

  test("soft delete hides a record, include deleted shows it, restore brings it back", async () => {
    await openPosts();
    await page.locator("tr", { hasText: "Second post" }).getByRole("button", { name: "Delete", exact: true }).click();
    await okNotice("deleted (soft)");
    await page.locator("td", { hasText: "Second post" }).waitFor({ state: "detached" });
    await page.getByLabel("Include deleted").check();
    await page.getByRole("button", { name: "Apply" }).click();
    const row = page.locator("tr", { hasText: "Second post" });
    await row.locator(".badge", { hasText: "deleted" }).waitFor();
    await shot("05-deleted");
    await row.getByRole("button", { name: "Restore" }).click();
    await okNotice("restored");
    await page.locator("tr", { hasText: "Second post" }).locator(".badge", { hasText: "active" }).waitFor();
    const list = await adminApi("GET", "/posts?include_deleted=true");
    expect(list.items.every((r: any) => r._deleted_at === null)).toBe(true);
  }, STEP);

  test("hard delete asks for confirmation, then removes the record for good", async () => {
    await openPosts();
    await page.locator("tr", { hasText: "Hello world" }).getByRole("button", { name: "Hard delete" }).click();
    await page.getByRole("button", { name: "Cancel" }).click();
    expect((await adminApi("GET", "/posts")).total).toBe(3);
    await page.locator("tr", { hasText: "Hello world" }).getByRole("button", { name: "Hard delete" }).click();
    await page.getByRole("button", { name: "Delete forever" }).click();
    await page.locator("td", { hasText: "Hello world" }).waitFor({ state: "detached" });
    const list = await adminApi("GET", "/posts?include_deleted=true");
    expect(list.items.map((r: any) => r.title).sort()).toEqual(["Second post", "Third post"]);
  }, STEP);

  test("cursor pages move forward and back", async () => {
    // All 15 records exist before the page opens, so no live reload runs while the pages are turned.
    const bulk = Array.from({ length: 12 }, (_, i) => ({ title: `Bulk ${String(i + 1).padStart(2, "0")}`, n: 101 + i }));
    await openPosts([...RECORDS, ...bulk]);
    await page.getByLabel("Page size").selectOption("10");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("Page 1 · 15 matching").waitFor();
    await expect(page.locator("tbody tr").count()).resolves.toBe(10);
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByText("Page 2 · 15 matching").waitFor();
    await expect(page.locator("tbody tr").count()).resolves.toBe(5);
    expect(await page.getByRole("button", { name: "Next →" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "← Previous" }).click();
    await page.getByText("Page 1 · 15 matching").waitFor();
    await expect(page.locator("tbody tr").count()).resolves.toBe(10);
  }, STEP);

  test("the collections list shows record counts", async () => {
    await openPosts();
    await page.getByRole("link", { name: "Collections", exact: true }).first().click();
    await page.getByRole("heading", { name: "Collections" }).waitFor();
    await expect(page.locator('[data-count="posts"]').textContent()).resolves.toBe("3");
    await shot("02-collections");
  }, STEP);

  test("a relation is created and deleted from the relations page", async () => {
    await openPosts([]);
    await adminApi("POST", "/admin/collections", { name: "authors" });
    await page.getByRole("link", { name: "Relations" }).click();
    await page.getByRole("heading", { name: "Relations" }).waitFor();
    const fillRelation = async () => {
      await page.getByLabel("From collection").selectOption("posts");
      await page.getByLabel("From field").fill("author");
      await page.getByLabel("Type").selectOption("one");
      await page.getByLabel("To collection").selectOption("authors");
      await page.getByLabel("On delete").selectOption("cascade");
      await page.getByRole("button", { name: "Create relation" }).click();
    };
    await fillRelation();
    await okNotice("Relation created.");
    await page.locator("tr", { hasText: "posts.author" }).waitFor();
    const { items } = await adminApi("GET", "/admin/relations");
    expect(items).toMatchObject([{ from_col: "posts", from_field: "author", to_col: "authors", type: "one", on_delete: "cascade" }]);
    await fillRelation();
    await errorNotice('a relation on "posts.author" already exists');
    await shot("07-relations");
    await page.locator("tr", { hasText: "posts.author" }).getByRole("button", { name: "Delete" }).click();
    await page.locator("dialog").getByRole("button", { name: "Delete" }).click();
    await okNotice("Relation deleted.");
    expect((await adminApi("GET", "/admin/relations")).items).toEqual([]);
  }, STEP);

  test("a user's session is revoked from the console, and its token stops working at once", async () => {
    const access_token = await registerAnn();
    const me = () => fetch(`${running.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${access_token}` } }).then((r) => r.status);
    expect(await me()).toBe(200);
    await openAnn();
    const rows = page.locator("tr[data-session]");
    await expect(rows.count()).resolves.toBe(1);
    await shot("08-user");
    await rows.first().getByRole("button", { name: "Revoke" }).click();
    await okNotice("Session revoked");
    await page.getByText("No active sessions.").waitFor();
    expect(await me()).toBe(401);
  }, STEP);

  test("a user's roles, metadata and verified flag are saved; impersonation gives a working token", async () => {
    await registerAnn();
    await openAnn();
    await page.getByLabel("Roles (comma-separated)").fill("editor, staff");
    await page.getByLabel("Email verified").check();
    await page.getByLabel("Metadata (JSON object)").fill('{"plan": "pro"}');
    await page.getByRole("button", { name: "Save user" }).click();
    await okNotice("User saved.");
    // The notice comes before the page shows the saved user again (a new form): what is typed before that is lost.
    await page.locator('button[aria-busy="true"]').waitFor({ state: "detached" });
    const { items } = await adminApi("GET", "/admin/users?search=ann");
    expect(items[0]).toMatchObject({ email: "ann@example.com", is_verified: true, roles: ["editor", "staff"], metadata: { plan: "pro" } });
    await page.getByLabel("Metadata (JSON object)").fill('{"a": {"b": {"c": {"d": 1}}}}');
    await page.getByRole("button", { name: "Save user" }).click();
    await errorNotice("metadata");
    await page.getByRole("button", { name: "Impersonate" }).click();
    const token = await page.locator('textarea[name="impersonation_token"]').inputValue();
    const res = await fetch(`${running.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect((await res.json()).email).toBe("ann@example.com");
    await page.keyboard.press("Escape");
    await page.getByRole("button", { name: "Unlock" }).click();
    await okNotice("unlocked");
  }, STEP);

  test("a setting is changed and the OAuth callback URLs are shown", async () => {
    await loginAt();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    await expect(page.locator('[data-callback="codehost"]').textContent()).resolves.toBe(`${PUBLIC_URL}/api/v1/auth/oauth/codehost/callback`);
    await expect(page.locator('[data-callback="oidc"]').textContent()).resolves.toBe(`${PUBLIC_URL}/api/v1/auth/oauth/oidc/callback`);
    // The read-only redirect addresses are shown, never offered as an editable field.
    expect(await page.locator('[name="oauth_redirect_urls"]').count()).toBe(0);
    await page.getByLabel("Registration open").uncheck();
    await page.getByLabel("Require a verified email").check();
    await page.getByLabel("Access token lifetime (seconds)").fill("600");
    await page.getByRole("button", { name: "Save settings" }).click();
    await okNotice("Settings saved");
    const s = await adminApi("GET", "/admin/settings");
    expect(s.registration_open).toBe(false);
    expect(s.require_verified_email).toBe(true);
    expect(s.access_token_ttl_seconds).toBe(600);
    await shot("06-settings");
  }, STEP);

  test("an out-of-range setting shows the API's message", async () => {
    await loginAt("#/settings");
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    await page.getByLabel("Access token lifetime (seconds)").fill("0");
    await page.getByRole("button", { name: "Save settings" }).click();
    await errorNotice('setting "access_token_ttl_seconds" must be between');
  }, STEP);

  test("deleting a collection asks for its name to be typed", async () => {
    await adminApi("POST", "/admin/collections", { name: "scratch" });
    await loginAt("#/collections/scratch");
    await page.getByRole("heading", { name: "scratch", exact: true }).waitFor();
    await page.getByRole("button", { name: "Delete collection" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Type scratch to confirm").fill("scratc");
    await dialog.getByRole("button", { name: "Delete collection" }).click();
    await errorNotice("type scratch to confirm");
    await dialog.getByLabel("Type scratch to confirm").fill("scratch");
    await dialog.getByRole("button", { name: "Delete collection" }).click();
    await page.getByRole("heading", { name: "Collections" }).waitFor();
    const names = (await adminApi("GET", "/admin/collections")).items.map((c: any) => c.name);
    expect(names).not.toContain("scratch");
  }, STEP);

  test("deleting a user asks for the email to be typed", async () => {
    await registerAnn();
    await loginAt("#/users");
    await page.getByRole("link", { name: "ann@example.com" }).click();
    await page.getByRole("button", { name: "Delete user" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Type ann@example.com to confirm").fill("ann@example.com");
    await dialog.getByRole("button", { name: "Delete user" }).click();
    await page.getByRole("heading", { name: "Users" }).waitFor();
    expect((await adminApi("GET", "/admin/users")).total).toBe(0);
  }, STEP);

  test("an expired or rotated admin token sends the console back to the login form", async () => {
    await loginAt("#/settings");
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    await page.evaluate(() => sessionStorage.setItem("baas.admin.token", "a.b.c"));
    await page.getByRole("link", { name: "Collections", exact: true }).first().click();
    await page.getByLabel("Admin secret").waitFor();
    await errorNotice("Signed out");
    await page.getByLabel("Admin secret").fill(SECRET);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "Collections" }).waitFor();
  }, STEP);
});
