import { createHash } from "node:crypto";

/** What the stub provider answers about a user. */
export interface StubUser {
  id: number | string;
  login?: string;
  name?: string;
  avatar?: string;
  /** GitHub: the `/user/emails` list; Google: the first entry is the ID token's email. */
  emails: { email: string; primary: boolean; verified: boolean }[];
}

interface PendingCode {
  user: StubUser;
  challenge: string | null;
  method: string | null;
  nonce: string | null;
  redirectUri: string | null;
}

export interface ProviderStub {
  url: string;
  clientId: string;
  clientSecret: string;
  /** The user the next authorization signs in as. */
  loginAs: StubUser | null;
  /** The next authorization is refused, as a user clicking "Cancel" on the consent screen: back with `error=access_denied`. */
  denyNext: boolean;
  /** Query of the last authorization request. */
  lastAuthorize: Record<string, string>;
  /** Changes the claims of the next ID token (Google stub). */
  tamperClaims: ((claims: Record<string, unknown>) => void) | null;
  /** Builds the next ID token from its claims instead of signing it (Google stub). */
  forgeIdToken: ((claims: Record<string, unknown>) => string) | null;
  /** Signs the next ID token with a key the JWKS does not publish (Google stub). */
  signWithUnknownKey: boolean;
  /** Replaces the signing key with a new one under a new key id, as a provider rotating keys (Google stub). */
  rotateKey(): Promise<void>;
  /** How often the JWKS was fetched. */
  jwksHits: number;
  stop(): void;
}

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

async function es256Key() {
  return crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
}

/**
 * A stand-in for GitHub (`kind: "codehost"`) or Google (`kind: "portal"`) on 127.0.0.1:
 * authorize redirects straight back with a code, the token endpoint checks the client
 * credentials, the redirect URI and the PKCE verifier; GitHub serves `/api/user` and
 * `/api/user/emails`, Google an ES256-signed ID token and its JWKS.
 */
export async function startProviderStub(kind: "codehost" | "portal"): Promise<ProviderStub> {
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, StubUser>();
  let key = await es256Key();
  let kid = "stub-es256";
  const otherKey = await es256Key();
  const jwkOf = async () => ({ ...(await crypto.subtle.exportKey("jwk", key.publicKey)), kid, alg: "ES256", use: "sig" });
  let publicJwk = await jwkOf();
  let base = "";
  const stub: ProviderStub = {
    url: "",
    clientId: `${kind}-client-id`,
    clientSecret: `${kind}-client-secret`,
    loginAs: null,
    denyNext: false,
    lastAuthorize: {},
    tamperClaims: null,
    forgeIdToken: null,
    signWithUnknownKey: false,
    jwksHits: 0,
    async rotateKey() {
      key = await es256Key();
      kid = `stub-es256-${crypto.randomUUID()}`;
      publicJwk = await jwkOf();
    },
    stop: () => server.stop(true),
  };

  async function idToken(user: StubUser, nonce: string | null): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const first = user.emails[0];
    const claims: Record<string, unknown> = { iss: base, aud: stub.clientId, sub: String(user.id), iat: now, exp: now + 3600, nonce, name: user.name, picture: user.avatar };
    if (first) Object.assign(claims, { email: first.email, email_verified: first.verified });
    stub.tamperClaims?.(claims);
    stub.tamperClaims = null;
    const forge = stub.forgeIdToken;
    stub.forgeIdToken = null;
    if (forge) return forge(claims);
    const signing = `${b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid }))}.${b64url(JSON.stringify(claims))}`;
    const k = stub.signWithUnknownKey ? otherKey.privateKey : key.privateKey;
    stub.signWithUnknownKey = false;
    const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, k, new TextEncoder().encode(signing));
    return `${signing}.${b64url(new Uint8Array(sig))}`;
  }

  async function token(req: Request): Promise<Response> {
    const form = new URLSearchParams(await req.text());
    const basic = `Basic ${Buffer.from(`${stub.clientId}:${stub.clientSecret}`).toString("base64")}`;
    const pending = codes.get(form.get("code") ?? "");
    codes.delete(form.get("code") ?? "");
    const verifier = form.get("code_verifier") ?? "";
    const challengeOk = !!pending && pending.method === "S256" && createHash("sha256").update(verifier).digest("base64url") === pending.challenge;
    if (req.headers.get("authorization") !== basic || !pending || !challengeOk || form.get("redirect_uri") !== pending.redirectUri) {
      // GitHub answers a refused exchange with 200 and an error body; Google with 400.
      return Response.json({ error: "bad_verification_code" }, { status: kind === "codehost" ? 200 : 400 });
    }
    const access = crypto.randomUUID();
    tokens.set(access, pending.user);
    if (kind === "codehost") return Response.json({ access_token: access, token_type: "bearer", scope: "read:user,user:email" });
    return Response.json({ access_token: access, token_type: "Bearer", expires_in: 3600, id_token: await idToken(pending.user, pending.nonce) });
  }

  function userOf(req: Request): StubUser | null {
    return tokens.get((req.headers.get("authorization") ?? "").replace(/^Bearer /, "")) ?? null;
  }

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      const authorizePath = kind === "codehost" ? "/login/oauth/authorize" : "/o/oauth2/v2/auth";
      if (path === authorizePath) {
        const q = Object.fromEntries(url.searchParams);
        stub.lastAuthorize = q;
        if (q.client_id !== stub.clientId || !stub.loginAs || !q.redirect_uri) return new Response("bad request", { status: 400 });
        const back = new URL(q.redirect_uri);
        if (stub.denyNext) {
          stub.denyNext = false;
          back.searchParams.set("error", "access_denied");
          back.searchParams.set("error_description", "The user has denied your application access.");
        } else {
          const code = crypto.randomUUID();
          codes.set(code, { user: stub.loginAs, challenge: q.code_challenge ?? null, method: q.code_challenge_method ?? null, nonce: q.nonce ?? null, redirectUri: q.redirect_uri });
          back.searchParams.set("code", code);
        }
        back.searchParams.set("state", q.state ?? "");
        return new Response(null, { status: 302, headers: { location: back.toString() } });
      }
      if (req.method === "POST" && path === (kind === "codehost" ? "/login/oauth/access_token" : "/token")) return token(req);
      if (kind === "portal" && path === "/oauth2/v3/certs") {
        stub.jwksHits++;
        return Response.json({ keys: [publicJwk] });
      }
      const user = userOf(req);
      if (kind === "codehost" && path === "/api/user") {
        if (!user) return Response.json({ message: "Bad credentials" }, { status: 401 });
        const primary = user.emails.find((e) => e.primary);
        return Response.json({ id: user.id, login: user.login, name: user.name ?? null, avatar_url: user.avatar ?? null, email: primary?.email ?? null });
      }
      if (kind === "codehost" && path === "/api/user/emails") {
        if (!user) return Response.json({ message: "Bad credentials" }, { status: 401 });
        return Response.json(user.emails.map((e) => ({ ...e, visibility: null })));
      }
      if (kind === "portal" && path === "/v1/userinfo") {
        if (!user) return new Response(null, { status: 401 });
        return Response.json({ sub: String(user.id), name: user.name });
      }
      return new Response("not found", { status: 404 });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
  stub.url = base;
  return stub;
}
