import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { URI, type TOTP } from "otpauth";
import { sha256 } from "../../src/crypto.ts";
import { appPerTest, patchSettings, registerUser } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";
import { CookieJar, runBrowserFlow } from "../helpers/browser-flow.ts";
import { startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.ts";

// Password hashing (argon2id) in registerUser is slow on a loaded machine.
setDefaultTimeout(30_000);

const CALLBACK = "http://localhost/api/v1/auth/oauth/oidc/callback";
let op: TestOidcProvider;

// One OpenID provider for the file (its accounts are fixed; a login only picks one); every test gets its own app.
beforeAll(async () => {
  op = await startOidcProvider(CALLBACK);
  op.accounts.set("alice", { email: "Alice@Example.com", email_verified: true, name: "Alice A." });
  op.accounts.set("bob", { email: "bob@example.com", email_verified: true, name: "Bob" });
  op.accounts.set("carol", { email: "carol@example.com", email_verified: false });
  op.accounts.set("dave", { email: "dave@example.com", email_verified: true });
  op.accounts.set("erin", { email: "erin@example.com", email_verified: true });
  op.accounts.set("frank", { email: "frank@example.com", email_verified: true });
  op.accounts.set("gina", { email: "gina@example.com", email_verified: true });
});
afterAll(async () => {
  await op?.close();
});

const t = appPerTest(
  (t) => patchSettings(t, { oauth_oidc_issuer: op.issuer, oauth_oidc_client_id: op.clientId, oauth_oidc_client_secret: op.clientSecret }),
  { env: { PUBLIC_URL: "http://localhost", APP_URL: "http://app.test" } },
);

async function loginAs(account: string, opts: Parameters<typeof runBrowserFlow>[2] = {}) {
  op.loginAs = account;
  return runBrowserFlow(t, "/api/v1/auth/oauth/oidc", opts);
}

async function meOf(token: string) {
  const res = await t.req("GET", "/api/v1/auth/me", { token });
  expect(res.status).toBe(200);
  return res.body;
}

const isProviderAuthorize = (u: URL) => u.origin === op.issuer && u.pathname === "/auth";
const isCallback = (u: URL) => u.toString().startsWith(CALLBACK);

describe("OIDC login against a real OpenID provider", () => {
  test("the start route redirects to the provider with state, PKCE S256, nonce, the scopes and an HttpOnly state cookie", async () => {
    const res = await t.req("GET", "/api/v1/auth/oauth/oidc");
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get("location")!);
    expect(`${loc.origin}${loc.pathname}`).toBe(`${op.issuer}/auth`);
    const q = Object.fromEntries(loc.searchParams);
    expect(q.response_type).toBe("code");
    expect(q.client_id).toBe(op.clientId);
    expect(q.redirect_uri).toBe(CALLBACK);
    expect(q.scope).toBe("openid email profile");
    expect(q.code_challenge_method).toBe("S256");
    expect(q.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.nonce!.length).toBeGreaterThanOrEqual(20);
    expect(q.state!.length).toBeGreaterThanOrEqual(40);
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^baas_oauth=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Path=/api/v1/auth/oauth");
    expect(cookie).toContain("Max-Age=600");
    // Stored hashed: the raw state is nowhere in the table.
    const rows = (await t.db.all<{ state_hash: string }>("SELECT state_hash FROM _oauth_states")).map((r) => r.state_hash);
    expect(rows).toContain(sha256(q.state!));
    expect(rows).not.toContain(q.state!);
  });

  test("a new user is created email-verified and lands on the app with tokens", async () => {
    const flow = await loginAs("alice");
    expect(Object.keys(flow.params).sort()).toEqual(["access_token", "expires_in", "refresh_token"]);
    expect(flow.params.expires_in).toBe("900");
    const me = await meOf(flow.params.access_token!);
    expect(me.email).toBe("alice@example.com");
    expect(me.is_verified).toBe(true);
    const refreshed = await t.req("POST", "/api/v1/auth/refresh", { body: { refresh_token: flow.params.refresh_token } });
    expect(refreshed.status).toBe(200);
    const accounts = await t.req("GET", "/api/v1/auth/oauth/accounts", { token: flow.params.access_token });
    expect(accounts.status).toBe(200);
    expect(accounts.body).toEqual({
      accounts: [{ provider: "oidc", email: "alice@example.com", name: "Alice A.", avatar_url: null, created_at: expect.any(Number) }],
    });
  });

  test("the discovery document is fetched once and then served from the cache", async () => {
    const before = op.discoveryHits;
    await loginAs("alice");
    await loginAs("alice");
    expect(op.discoveryHits - before).toBe(1);
  });

  test("a returning user gets the same account through the linked provider identity", async () => {
    const first = await meOf((await loginAs("alice")).params.access_token!);
    const second = await meOf((await loginAs("alice")).params.access_token!);
    expect(second.id).toBe(first.id);
    expect(await countRows(t, "_oauth_accounts", "user_id = ?", [first.id])).toBe(1);
  });

  test("an existing user is linked when the provider says the email is verified", async () => {
    const bob = await registerUser(t, "bob@example.com");
    expect(bob.body.user.is_verified).toBe(false);
    const flow = await loginAs("bob");
    const me = await meOf(flow.params.access_token!);
    expect(me.id).toBe(bob.id);
    expect(me.is_verified).toBe(true);
    const accounts = await t.req("GET", "/api/v1/auth/oauth/accounts", { token: flow.params.access_token });
    expect(accounts.body.accounts.map((a: { provider: string }) => a.provider)).toEqual(["oidc"]);
  });

  test("linking to an account that was never verified drops its password, sessions and API keys (a pre-registered squatter loses access)", async () => {
    const squatter = await registerUser(t, "frank@example.com", "squatter-pass-1");
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: squatter.token, body: { name: "k" } });
    expect(key.status).toBe(201);
    const flow = await loginAs("frank");
    expect((await meOf(flow.params.access_token!)).id).toBe(squatter.id);
    expect((await t.req("GET", "/api/v1/auth/me", { token: squatter.token })).status).toBe(401);
    const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "frank@example.com", password: "squatter-pass-1" } });
    expect(login.status).toBe(401);
    expect((await t.req("GET", "/api/v1/auth/oauth/accounts", { headers: { "x-api-key": key.body.key } })).status).toBe(401);
    expect(await countRows(t, "_api_keys", "user_id = ? AND revoked_at IS NULL", [squatter.id])).toBe(0);
  });

  test("linking to an already verified account keeps its password and sessions", async () => {
    const created = await t.admin("POST", "/api/v1/admin/users", { email: "gina@example.com", password: "gina-password-1", is_verified: true });
    expect(created.status).toBe(201);
    const session = await t.req("POST", "/api/v1/auth/login", { body: { email: "gina@example.com", password: "gina-password-1" } });
    expect(session.status).toBe(200);
    const flow = await loginAs("gina");
    expect((await meOf(flow.params.access_token!)).id).toBe(created.body.id);
    expect((await t.req("GET", "/api/v1/auth/me", { token: session.body.access_token })).status).toBe(200);
    expect((await t.req("POST", "/api/v1/auth/login", { body: { email: "gina@example.com", password: "gina-password-1" } })).status).toBe(200);
  });

  test("an existing user is not linked when the provider has not verified the email", async () => {
    const carol = await registerUser(t, "carol@example.com");
    const flow = await loginAs("carol");
    expect(flow.params).toEqual({ error: "email_not_verified" });
    const accounts = await t.req("GET", "/api/v1/auth/oauth/accounts", { token: carol.token });
    expect(accounts.body).toEqual({ accounts: [] });
  });

  test("with registration closed a new provider user is refused and nothing is created", async () => {
    expect((await loginAs("alice")).params.access_token).toBeString();
    await t.admin("PATCH", "/api/v1/admin/settings", { registration_open: false });
    try {
      const flow = await loginAs("dave");
      expect(flow.params).toEqual({ error: "registration_closed" });
      expect(await t.db.get("SELECT id FROM _users WHERE email = ?", ["dave@example.com"])).toBeNull();
      // A linked user still gets in while registration is closed.
      expect((await loginAs("alice")).params.access_token).toBeString();
    } finally {
      await t.admin("PATCH", "/api/v1/admin/settings", { registration_open: true });
    }
  });

  test("a forged state ends in error=invalid_state", async () => {
    const flow = await loginAs("alice", {
      beforeHop: (u) => {
        if (isCallback(u)) u.searchParams.set("state", "forged-state-value");
      },
    });
    expect(flow.params).toEqual({ error: "invalid_state" });
  });

  test("a replayed state ends in error=invalid_state even with its cookie", async () => {
    const jar = new CookieJar();
    let callbackUrl: URL | null = null;
    let cookie: string | undefined;
    const flow = await loginAs("alice", {
      jar,
      beforeHop: (u) => {
        if (isCallback(u)) {
          callbackUrl = new URL(u);
          cookie = jar.get("localhost", "baas_oauth");
        }
      },
    });
    expect(flow.params.access_token).toBeString();
    expect(cookie).toBeString();
    const replay = await t.app.handle(new Request(callbackUrl!, { headers: { cookie: `baas_oauth=${cookie}` } }));
    expect(replay.status).toBe(302);
    expect(replay.headers.get("location")).toBe("http://app.test/auth/callback?error=invalid_state");
  });

  test("a state presented without the browser's cookie ends in error=invalid_state", async () => {
    const jar = new CookieJar();
    const flow = await loginAs("alice", {
      jar,
      beforeHop: (u) => {
        if (isCallback(u)) jar.delete("localhost", "baas_oauth");
      },
    });
    expect(flow.params).toEqual({ error: "invalid_state" });
  });

  test("a state older than 10 minutes ends in error=invalid_state", async () => {
    const flow = await loginAs("alice", {
      beforeHop: (u) => {
        if (isCallback(u)) t.clock.advance(10 * 60 * 1000 + 1);
      },
    });
    t.clock.set(Date.now());
    expect(flow.params).toEqual({ error: "invalid_state" });
  });

  test("an ID token carrying another nonce ends in error=provider_error", async () => {
    const flow = await loginAs("erin", {
      beforeHop: (u) => {
        if (isProviderAuthorize(u)) u.searchParams.set("nonce", "not-the-nonce-baas-sent");
      },
    });
    expect(flow.params).toEqual({ error: "provider_error" });
    expect(t.log.lines.at(-1)).toMatchObject({ msg: "oauth provider error", fields: { provider: "oidc", reason: "wrong ID token nonce" } });
    expect(await t.db.get("SELECT id FROM _users WHERE email = ?", ["erin@example.com"])).toBeNull();
  });

  test("a provider that refuses the login ends in error=provider_error", async () => {
    const flow = await loginAs("alice", {
      beforeHop: (u) => {
        if (isCallback(u)) {
          u.searchParams.delete("code");
          u.searchParams.set("error", "access_denied");
        }
      },
    });
    expect(flow.params).toEqual({ error: "provider_error" });
  });

  test("a public client without a secret logs in with PKCE alone", async () => {
    await t.admin("PATCH", "/api/v1/admin/settings", { oauth_oidc_client_id: op.publicClientId, oauth_oidc_client_secret: "" });
    try {
      const flow = await loginAs("alice");
      expect((await meOf(flow.params.access_token!)).email).toBe("alice@example.com");
    } finally {
      await t.admin("PATCH", "/api/v1/admin/settings", { oauth_oidc_client_id: op.clientId, oauth_oidc_client_secret: op.clientSecret });
    }
  });

  test("a user with 2FA ends in totp_required with a totp_token that completes the login", async () => {
    op.accounts.set("frank", { email: "frank@example.com", email_verified: true });
    const token = (await loginAs("frank")).params.access_token!;
    const setup = await t.req("POST", "/api/v1/auth/2fa/setup", { token });
    expect(setup.status).toBe(200);
    const totp = URI.parse(setup.body.otpauth_url) as TOTP;
    const enable = await t.req("POST", "/api/v1/auth/2fa/enable", { token, body: { code: totp.generate({ timestamp: t.clock.now() }) } });
    expect(enable.status).toBe(200);
    const flow = await loginAs("frank");
    expect(Object.keys(flow.params).sort()).toEqual(["totp_required", "totp_token"]);
    expect(flow.params.totp_required).toBe("true");
    t.clock.advance(30_000);
    const verify = await t.req("POST", "/api/v1/auth/2fa/verify", {
      body: { totp_token: flow.params.totp_token, code: totp.generate({ timestamp: t.clock.now() }) },
    });
    expect(verify.status).toBe(200);
    expect(verify.body.user.email).toBe("frank@example.com");
  });

  test("unlinking removes the provider account and a second unlink is 404", async () => {
    const flow = await loginAs("dave");
    const token = flow.params.access_token!;
    const del = await t.req("DELETE", "/api/v1/auth/oauth/oidc", { token });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ ok: true });
    expect((await t.req("GET", "/api/v1/auth/oauth/accounts", { token })).body).toEqual({ accounts: [] });
    const again = await t.req("DELETE", "/api/v1/auth/oauth/oidc", { token });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("not_found");
  });
});

describe("OIDC routes: errors and settings", () => {
  test("an unknown provider is 404 not_found on every OAuth route", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/auth/oauth/nope"],
      ["GET", "/api/v1/auth/oauth/nope/callback?state=x&code=y"],
    ] as const) {
      const res = await t.req(method, path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'unknown OAuth provider "nope"', code: "not_found" });
    }
  });

  test("a provider without credentials is 400 bad_request", async () => {
    const res = await t.req("GET", "/api/v1/auth/oauth/codehost");
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'OAuth provider "codehost" is not configured', code: "bad_request" });
  });

  test("an issuer whose discovery document cannot be read sends the browser to error=provider_error", async () => {
    const wrong = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({ issuer: "https://someone-else.example" }) });
    try {
      for (const issuer of [`http://127.0.0.1:${wrong.port}`, "http://127.0.0.1:1"]) {
        await t.admin("PATCH", "/api/v1/admin/settings", { oauth_oidc_issuer: issuer });
        const res = await t.req("GET", "/api/v1/auth/oauth/oidc");
        expect(res.status).toBe(302);
        expect(res.headers.get("location")).toBe("http://app.test/auth/callback?error=provider_error");
      }
    } finally {
      wrong.stop(true);
      await t.admin("PATCH", "/api/v1/admin/settings", { oauth_oidc_issuer: op.issuer });
    }
    expect((await loginAs("alice")).params.access_token).toBeString();
  });

  test("the linked accounts list needs a user token", async () => {
    const res = await t.req("GET", "/api/v1/auth/oauth/accounts");
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
    expect((await t.req("DELETE", "/api/v1/auth/oauth/oidc")).status).toBe(401);
  });

  test("with OAuth disabled the start route is 403 method_disabled and the callback ends in error=method_disabled", async () => {
    const start = await t.req("GET", "/api/v1/auth/oauth/oidc");
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const cookie = start.headers.get("set-cookie")!.split(";")[0]!;
    await t.admin("PATCH", "/api/v1/admin/settings", { auth_oauth_enabled: false });
    try {
      const res = await t.req("GET", "/api/v1/auth/oauth/oidc");
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: "OAuth login is disabled on this server", code: "method_disabled" });
      const cb = await t.req("GET", `/api/v1/auth/oauth/oidc/callback?state=${state}&code=abc`, { headers: { cookie } });
      expect(cb.status).toBe(302);
      expect(cb.headers.get("location")).toBe("http://app.test/auth/callback?error=method_disabled");
    } finally {
      await t.admin("PATCH", "/api/v1/admin/settings", { auth_oauth_enabled: true });
    }
  });

  test("the admin settings show the redirect address of every provider, and PATCH ignores it", async () => {
    const res = await t.admin("GET", "/api/v1/admin/settings");
    expect(res.body.oauth_redirect_urls).toEqual({
      codehost: "http://localhost/api/v1/auth/oauth/codehost/callback",
      portal: "http://localhost/api/v1/auth/oauth/portal/callback",
      oidc: CALLBACK,
    });
    expect(res.body.oauth_oidc_client_secret).toBe("********");
    const patched = await t.admin("PATCH", "/api/v1/admin/settings", { ...res.body, app_name: "renamed" });
    expect(patched.status).toBe(200);
    expect(patched.body.app_name).toBe("renamed");
    expect(patched.body.oauth_oidc_client_secret).toBe("********");
    expect(patched.body.oauth_redirect_urls.oidc).toBe(CALLBACK);
    // The secret survived being sent back masked: logins still work.
    expect((await loginAs("alice")).params.access_token).toBeString();
  });
});
