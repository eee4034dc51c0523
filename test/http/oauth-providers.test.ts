import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { appPerTest, patchSettings, registerUser } from "../helpers/app.ts";
import { runBrowserFlow } from "../helpers/browser-flow.ts";
import { startProviderStub, type ProviderStub, type StubUser } from "../helpers/oauth-stubs.ts";

// Password hashing (argon2id) in registerUser is slow on a loaded machine.
setDefaultTimeout(30_000);

let github: ProviderStub;
let google: ProviderStub;

beforeAll(async () => {
  github = await startProviderStub("codehost");
  google = await startProviderStub("portal");
});
afterAll(() => {
  github?.stop();
  google?.stop();
});

// Every test gets its own app, configured for both stubs (which are shared: they keep no state between logins).
const t = appPerTest(
  (t) =>
    patchSettings(t, {
      oauth_codehost_client_id: github.clientId,
      oauth_codehost_client_secret: github.clientSecret,
      oauth_portal_client_id: google.clientId,
      oauth_portal_client_secret: google.clientSecret,
    }),
  () => ({
    env: { PUBLIC_URL: "http://localhost", APP_URL: "http://app.test", OAUTH_CODEHOST_BASE_URL: github.url, OAUTH_PORTAL_BASE_URL: google.url },
  }),
);

function login(stub: ProviderStub, provider: "codehost" | "portal", user: StubUser, beforeHop?: (u: URL) => URL | void) {
  stub.loginAs = user;
  return runBrowserFlow(t, `/api/v1/auth/oauth/${provider}`, { beforeHop });
}

async function meOf(token: string | undefined) {
  const res = await t.req("GET", "/api/v1/auth/me", { token });
  expect(res.status).toBe(200);
  return res.body;
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const verified = (email: string) => [{ email, primary: true, verified: true }];

describe("codehost (GitHub) login against a stub of its endpoints", () => {
  const octo: StubUser = {
    id: 583231,
    login: "octocat",
    name: "The Octocat",
    avatar: "https://avatars.example/u/583231",
    emails: [
      { email: "octo-old@example.com", primary: false, verified: true },
      { email: "Octocat@Example.com", primary: true, verified: true },
    ],
  };

  test("the start route asks GitHub for the user and email scopes with state and PKCE S256", async () => {
    const res = await t.req("GET", "/api/v1/auth/oauth/codehost");
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get("location")!);
    expect(`${loc.origin}${loc.pathname}`).toBe(`${github.url}/login/oauth/authorize`);
    expect(loc.searchParams.get("scope")).toBe("read:user user:email");
    expect(loc.searchParams.get("redirect_uri")).toBe("http://localhost/api/v1/auth/oauth/codehost/callback");
    expect(loc.searchParams.get("code_challenge_method")).toBe("S256");
    expect(loc.searchParams.get("state")).toBeString();
    expect(loc.searchParams.has("nonce")).toBe(false);
  });

  test("a new user is created from the verified primary email, and the linked account carries name and avatar", async () => {
    const flow = await login(github, "codehost", octo);
    expect(flow.params.expires_in).toBe("900");
    const me = await meOf(flow.params.access_token);
    expect(me.email).toBe("octocat@example.com");
    expect(me.is_verified).toBe(true);
    const accounts = await t.req("GET", "/api/v1/auth/oauth/accounts", { token: flow.params.access_token });
    expect(accounts.body).toEqual({
      accounts: [
        { provider: "codehost", email: "octocat@example.com", name: "The Octocat", avatar_url: "https://avatars.example/u/583231", created_at: expect.any(Number) },
      ],
    });
  });

  test("the same GitHub id logs in to the same user even after the email changed there", async () => {
    const first = await meOf((await login(github, "codehost", octo)).params.access_token);
    const moved = { ...octo, emails: verified("octo-new@example.com") };
    const second = await meOf((await login(github, "codehost", moved)).params.access_token);
    expect(second.id).toBe(first.id);
  });

  test("an unverified primary email ends in error=email_not_verified, also for an existing user", async () => {
    await registerUser(t, "unverified-gh@example.com");
    for (const email of ["unverified-gh@example.com", "nobody-gh@example.com"]) {
      const flow = await login(github, "codehost", { id: `u-${email}`, login: "u", emails: [{ email, primary: true, verified: false }] });
      expect(flow.params).toEqual({ error: "email_not_verified" });
    }
    expect(await t.db.get("SELECT id FROM _users WHERE email = ?", ["nobody-gh@example.com"])).toBeNull();
  });

  test("a GitHub user without any email ends in error=no_email", async () => {
    const flow = await login(github, "codehost", { id: 77, login: "ghost", emails: [] });
    expect(flow.params).toEqual({ error: "no_email" });
  });

  test("an existing user with the same verified email is linked, not duplicated", async () => {
    const existing = await registerUser(t, "linkme-gh@example.com");
    const flow = await login(github, "codehost", { id: 4242, login: "linkme", emails: verified("linkme-gh@example.com") });
    expect((await meOf(flow.params.access_token)).id).toBe(existing.id);
  });

  test("a code exchanged without the right PKCE verifier ends in error=provider_error", async () => {
    const flow = await login(github, "codehost", octo, (u) => {
      if (u.origin === github.url && u.pathname === "/login/oauth/authorize") u.searchParams.set("code_challenge", "A".repeat(43));
    });
    expect(flow.params).toEqual({ error: "provider_error" });
  });
});

describe("portal (Google) login against a stub of its endpoints", () => {
  const ada: StubUser = { id: "109876543210", name: "Ada L.", avatar: "https://photos.example/ada.png", emails: verified("ada@example.com") };

  test("the start route asks Google for openid email profile with state, nonce and PKCE S256", async () => {
    const res = await t.req("GET", "/api/v1/auth/oauth/portal");
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get("location")!);
    expect(`${loc.origin}${loc.pathname}`).toBe(`${google.url}/o/oauth2/v2/auth`);
    expect(loc.searchParams.get("scope")).toBe("openid email profile");
    expect(loc.searchParams.get("redirect_uri")).toBe("http://localhost/api/v1/auth/oauth/portal/callback");
    expect(loc.searchParams.get("code_challenge_method")).toBe("S256");
    expect(loc.searchParams.get("nonce")).toBeString();
  });

  test("a new user is created from the ES256-signed ID token", async () => {
    const flow = await login(google, "portal", ada);
    const me = await meOf(flow.params.access_token);
    expect(me.email).toBe("ada@example.com");
    expect(me.is_verified).toBe(true);
    const accounts = await t.req("GET", "/api/v1/auth/oauth/accounts", { token: flow.params.access_token });
    expect(accounts.body.accounts).toEqual([
      { provider: "portal", email: "ada@example.com", name: "Ada L.", avatar_url: "https://photos.example/ada.png", created_at: expect.any(Number) },
    ]);
  });

  test("an email Google has not verified ends in error=email_not_verified", async () => {
    const flow = await login(google, "portal", { id: "g-unverified", emails: [{ email: "unverified-g@example.com", primary: true, verified: false }] });
    expect(flow.params).toEqual({ error: "email_not_verified" });
  });

  test("an ID token without email (and no email from userinfo) ends in error=no_email", async () => {
    const flow = await login(google, "portal", { id: "g-noemail", emails: [] });
    expect(flow.params).toEqual({ error: "no_email" });
  });

  const refused: [string, (s: ProviderStub) => void, string][] = [
    ["signed by a key the JWKS does not publish", (s) => void (s.signWithUnknownKey = true), "bad ID token signature"],
    ["for another audience", (s) => void (s.tamperClaims = (c) => void (c.aud = "someone-else")), "wrong ID token audience"],
    ["from another issuer", (s) => void (s.tamperClaims = (c) => void (c.iss = "https://evil.example")), "wrong ID token issuer"],
    ["that has expired", (s) => void (s.tamperClaims = (c) => void (c.exp = Math.floor(Date.now() / 1000) - 3600)), "expired ID token"],
    ["with another nonce", (s) => void (s.tamperClaims = (c) => void (c.nonce = "replayed")), "wrong ID token nonce"],
    ["with alg none", (s) => void (s.forgeIdToken = (c) => `${b64url({ alg: "none", typ: "JWT" })}.${b64url(c)}.`), "unsupported ID token algorithm none"],
    [
      "signed HS256 with the provider's public key as secret",
      (s) =>
        void (s.forgeIdToken = (c) => {
          const signing = `${b64url({ alg: "HS256", typ: "JWT", kid: "stub-es256" })}.${b64url(c)}`;
          return `${signing}.${createHmac("sha256", s.url).update(signing).digest("base64url")}`;
        }),
      "unsupported ID token algorithm HS256",
    ],
  ];
  for (const [i, [what, arrange, reason]] of refused.entries()) {
    test(`an ID token ${what} ends in error=provider_error and creates no user`, async () => {
      arrange(google);
      const email = `refused-${i}@example.com`;
      const flow = await login(google, "portal", { id: `g-${what}`, emails: verified(email) });
      expect(flow.params).toEqual({ error: "provider_error" });
      expect(t.log.lines.at(-1)).toMatchObject({ msg: "oauth provider error", fields: { provider: "portal", reason } });
      expect(await t.db.get("SELECT id FROM _users WHERE email = ?", [email])).toBeNull();
    });
  }

  test("after a key rotation the JWKS is fetched again, at most once per 30 seconds", async () => {
    const user: StubUser = { id: "g-rotation", emails: verified("rotation@example.com") };
    expect((await login(google, "portal", user)).params.access_token).toBeString();
    const hits = google.jwksHits;
    await google.rotateKey();
    t.clock.advance(31_000);
    expect((await login(google, "portal", user)).params.access_token).toBeString();
    expect(google.jwksHits).toBe(hits + 1);
    await google.rotateKey();
    expect((await login(google, "portal", user)).params).toEqual({ error: "provider_error" });
    expect(google.jwksHits).toBe(hits + 1);
    t.clock.advance(31_000);
    expect((await login(google, "portal", user)).params.access_token).toBeString();
    expect(google.jwksHits).toBe(hits + 2);
  });

  test("a user linked with two providers lists both and can unlink one", async () => {
    const gh = await login(github, "codehost", { id: 31337, login: "both", emails: verified("both@example.com") });
    const gg = await login(google, "portal", { id: "g-both", emails: verified("both@example.com") });
    const token = gg.params.access_token;
    expect((await meOf(token)).id).toBe((await meOf(gh.params.access_token)).id);
    const before = await t.req("GET", "/api/v1/auth/oauth/accounts", { token });
    expect(before.body.accounts.map((a: { provider: string }) => a.provider).sort()).toEqual(["codehost", "portal"]);
    expect((await t.req("DELETE", "/api/v1/auth/oauth/codehost", { token })).body).toEqual({ ok: true });
    const after = await t.req("GET", "/api/v1/auth/oauth/accounts", { token });
    expect(after.body.accounts.map((a: { provider: string }) => a.provider)).toEqual(["portal"]);
    const unknown = await t.req("DELETE", "/api/v1/auth/oauth/nope", { token });
    expect(unknown.status).toBe(404);
  });
});
