import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";
import { launchBrowser, openRecordingPage } from "../helpers/browser.ts";
import { enableTotp, passCodeForm } from "../helpers/landing-page.ts";
import { startProviderStub, type ProviderStub, type StubUser } from "../helpers/oauth-stubs.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// Without APP_URL an OAuth login ends at the server's own /auth/callback: a real browser walks the
// whole login (server → GitHub stub → server callback → page) and the page does the rest.

let server: ServerProcess;
let github: ProviderStub;
let browser: Browser;
/** The server as its own addresses name it (PUBLIC_URL unset: http://localhost:<port>), so the state cookie travels. */
let origin: string;
const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };

beforeAll(async () => {
  github = await startProviderStub("codehost");
  server = await spawnServer({ env: { OAUTH_CODEHOST_BASE_URL: github.url } });
  origin = `http://localhost:${server.port}`;
  const res = await fetch(`${server.url}/api/v1/admin/settings`, {
    method: "PATCH",
    headers: admin,
    body: JSON.stringify({ oauth_codehost_client_id: github.clientId, oauth_codehost_client_secret: github.clientSecret }),
  });
  expect(res.status).toBe(200);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.cleanup();
  github?.stop();
});

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = { "content-type": "application/json" }) {
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

const githubUser = (id: number, email: string): StubUser => ({ id, login: `user${id}`, emails: [{ email, primary: true, verified: true }] });

/** A page that records every request it makes and every script error. */
const openPage = () => openRecordingPage(browser);

/** Signs in as `user` with the GitHub stub in the page, from the start route to the landing page. */
async function oauthLogin(page: Page, user: StubUser) {
  github.loginAs = user;
  const res = await page.goto(`${origin}/api/v1/auth/oauth/codehost`);
  expect(new URL(page.url()).pathname).toBe("/auth/callback");
  return res!;
}

/** From the landing page on, every request goes to the server itself (the login's hops before it go to the provider). */
function pageStaysHome(requests: string[]): void {
  const landing = requests.findIndex((r) => new URL(r).pathname === "/auth/callback");
  expect(landing).toBeGreaterThan(0);
  expect(requests.slice(0, landing).some((r) => r.startsWith(github.url))).toBe(true);
  for (const r of requests.slice(landing)) expect(new URL(r).origin).toBe(origin);
}

describe("the OAuth landing page of the server itself", () => {
  test("a login shows who is signed in; the tokens leave the address bar; the page loads nothing else", async () => {
    const { page, requests, errors } = await openPage();
    const res = await oauthLogin(page, githubUser(7001, "Oauth-Page@Example.test"));
    expect(res.status()).toBe(200);
    expect(res.headers()["content-type"]).toBe("text/html; charset=utf-8");
    const csp = res.headers()["content-security-policy"];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(res.headers()["referrer-policy"]).toBe("no-referrer");
    expect(res.headers()["cache-control"]).toBe("no-store");
    // The tokens came in the address; the HTML itself carries none of them.
    const landed = new URL(res.url());
    expect(landed.searchParams.get("access_token")).toBeString();
    expect(await res.text()).not.toContain(landed.searchParams.get("access_token")!);

    await page.getByText("You are signed in.").waitFor();
    expect(await page.locator("#signed-in-email").textContent()).toBe("oauth-page@example.test");
    expect(page.url()).toBe(`${origin}/auth/callback`);
    expect(await page.title()).toBe("Sign in · baas");
    // The page asked /auth/me with the access token it was given, and that token is a working session.
    expect(requests).toContain(`${origin}/api/v1/auth/me`);
    const me = await api("GET", "/auth/me", undefined, { authorization: `Bearer ${landed.searchParams.get("access_token")}` });
    expect(me.body.email).toBe("oauth-page@example.test");
    pageStaysHome(requests);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("a 2FA user is asked for the code; a wrong one is said so, the right one signs in", async () => {
    const user = githubUser(7002, "oauth-2fa@example.test");
    const first = await openPage();
    await oauthLogin(first.page, user);
    await first.page.getByText("You are signed in.").waitFor();
    const access = new URLSearchParams(first.requests.find((r) => new URL(r).pathname === "/auth/callback")!.split("?")[1]).get("access_token");
    await first.page.close();
    const totp = await enableTotp(server.url, access!);

    const { page, requests, errors } = await openPage();
    await oauthLogin(page, user);
    await page.getByLabel("Code").waitFor();
    expect(page.url()).toBe(`${origin}/auth/callback`);
    await passCodeForm(page, totp, "oauth-2fa@example.test");
    expect(requests.filter((r) => r === `${origin}/api/v1/auth/2fa/verify`)).toHaveLength(2);
    pageStaysHome(requests);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("a login the user denies at the provider ends in a sentence that says so", async () => {
    const { page, requests, errors } = await openPage();
    // The user clicks "Cancel" on the provider's consent screen: back to the callback with error=access_denied.
    github.denyNext = true;
    await oauthLogin(page, githubUser(7003, "oauth-denied@example.test"));
    await page.getByText("The sign-in was cancelled or refused at the provider, or could not be completed. Please try again.").waitFor();
    expect(page.url()).toBe(`${origin}/auth/callback`);
    expect(await page.locator("#error-text").getAttribute("role")).toBe("alert");
    expect(await page.locator("#done").isHidden()).toBe(true);
    expect((await api("GET", "/admin/users?search=oauth-denied", undefined, admin)).body).toEqual({ items: [], total: 0 });
    pageStaysHome(requests);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("a new user while registration is closed is told that sign-ups are closed", async () => {
    const patch = (v: boolean) => fetch(`${server.url}/api/v1/admin/settings`, { method: "PATCH", headers: admin, body: JSON.stringify({ registration_open: v }) });
    expect((await patch(false)).status).toBe(200);
    try {
      const { page, requests, errors } = await openPage();
      await oauthLogin(page, githubUser(7004, "oauth-closed@example.test"));
      await page.getByText("There is no account with this email address, and new sign-ups are closed.").waitFor();
      pageStaysHome(requests);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await patch(true);
    }
  }, 30_000);

  test("every error code of the docs has its own sentence; an unknown code or none at all is still a clear sentence", async () => {
    const sentences: Record<string, string> = {
      invalid_state: "This sign-in expired or was started in another browser or tab. Please start it again.",
      method_disabled: "Signing in with another account is turned off here.",
      provider_error: "The sign-in was cancelled or refused at the provider, or could not be completed. Please try again.",
      no_email: "Your account at the provider gave no email address. Add one there (or make it visible), then try again.",
      email_not_verified: "Your email address is not verified at the provider. Verify it there, then try again.",
      registration_closed: "There is no account with this email address, and new sign-ups are closed.",
      // Names an object has by inheritance are not codes either.
      constructor: "The sign-in did not work. Please start it again.",
      "<b>x</b>": "The sign-in did not work. Please start it again.",
    };
    const { page, requests, errors } = await openPage();
    for (const [code, sentence] of Object.entries(sentences)) {
      await page.goto(`${origin}/auth/callback?error=${encodeURIComponent(code)}`);
      await page.locator("#error-text").getByText(sentence, { exact: true }).waitFor();
      expect(page.url()).toBe(`${origin}/auth/callback`);
    }
    await page.goto(`${origin}/auth/callback`);
    await page.getByText("This page has no sign-in result. Start the sign-in again.").waitFor();
    // A token that does not work (expired, or forged) is not a signed-in state.
    await page.goto(`${origin}/auth/callback?access_token=not-a-token&refresh_token=x&expires_in=900`);
    await page.getByText("This sign-in has expired. Please start it again.").waitFor();
    // A dead totp_token: the code form is shown, and the answer says to start again.
    await page.goto(`${origin}/auth/callback?totp_required=true&totp_token=not-a-token`);
    await page.getByLabel("Code").fill("123456");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("This sign-in has expired or was already used. Please start it again.").waitFor();
    for (const r of requests) expect(new URL(r).origin).toBe(origin);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("JSON clients and POST keep the 404", async () => {
    const res = await fetch(`${server.url}/auth/callback?error=provider_error`, { headers: { accept: "application/json" } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "no such endpoint", code: "not_found" });
    const post = await fetch(`${server.url}/auth/callback`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(post.status).toBe(404);
    expect(await post.json()).toEqual({ error: "no such endpoint", code: "not_found" });
  });
});

describe("with a frontend of its own (APP_URL set elsewhere)", () => {
  test("the server serves no page at /auth/callback", async () => {
    const t = createTestApp({ env: { APP_URL: "https://app.example.test" } });
    try {
      const res = await t.req("GET", "/auth/callback?access_token=x&refresh_token=y&expires_in=900", { headers: { accept: "text/html" } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "no such endpoint", code: "not_found" });
    } finally {
      await t.close();
    }
  });
});
