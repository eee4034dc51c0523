import type { OAuth2Tokens } from "arctic";

/** arctic is loaded with the first OAuth sign-in, not at start. */
const arctic = () => require("arctic") as typeof import("arctic");
import type { AppContext } from "../../context.ts";
import { AppError, badRequest, notFound } from "../../errors.ts";
import { getSettings, oauthCallbackUrl as redirectUri, type Settings } from "../../settings/settings.ts";
import { fetchJson, IdTokenError, verifyIdToken } from "./jwks.ts";
import type { OAuthStateRow } from "./state.ts";

// arctic's generic OAuth2Client serves all three providers: its GitHub class sends no PKCE
// challenge (CONTRACT §7 asks for S256), and neither its GitHub nor its Google class lets the
// endpoints be pointed at a stand-in. The endpoints below are the same ones those classes use.

/** The providers of SPEC 5.6: `codehost` (GitHub), `portal` (Google), `oidc` (any OpenID provider). */
export const PROVIDERS = ["codehost", "portal", "oidc"] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** A provider's answer failed or could not be trusted; the callback ends in `error=provider_error`. */
export class ProviderError extends Error {
  override name = "ProviderError";
}

/** The user as a provider describes them. */
export interface ProviderProfile {
  id: string;
  email: string | null;
  /** True only when the provider says it checked the address. */
  emailVerified: boolean;
  name: string | null;
  avatarUrl: string | null;
}

interface Endpoints {
  authorization: string;
  token: string;
  userinfo: string | null;
  /** OIDC only. */
  jwks: string | null;
  issuers: string[];
  /** GitHub's REST API base. */
  api: string | null;
}

interface Credentials {
  clientId: string;
  clientSecret: string | null;
}

const DISCOVERY_TTL_MS = 60 * 60 * 1000;

/** 404 for a name that is no provider. */
export function requireProvider(name: string): ProviderName {
  if (!(PROVIDERS as readonly string[]).includes(name)) throw notFound(`unknown OAuth provider "${name}"`);
  return name as ProviderName;
}


function credentialsOf(s: Settings, provider: ProviderName): Credentials | null {
  if (provider === "codehost")
    return s.oauth_codehost_client_id && s.oauth_codehost_client_secret
      ? { clientId: s.oauth_codehost_client_id, clientSecret: s.oauth_codehost_client_secret }
      : null;
  if (provider === "portal")
    return s.oauth_portal_client_id && s.oauth_portal_client_secret
      ? { clientId: s.oauth_portal_client_id, clientSecret: s.oauth_portal_client_secret }
      : null;
  // A generic OpenID provider may register a public client (PKCE, no secret).
  return s.oauth_oidc_issuer && s.oauth_oidc_client_id
    ? { clientId: s.oauth_oidc_client_id, clientSecret: s.oauth_oidc_client_secret || null }
    : null;
}

/** The provider's credentials from the settings; 400 when the admin has not set them. */
export async function requireCredentials(ctx: AppContext, provider: ProviderName): Promise<Credentials> {
  const c = credentialsOf(await getSettings(ctx), provider);
  if (!c) throw badRequest(`OAuth provider "${provider}" is not configured`);
  return c;
}

function staticEndpoints(ctx: AppContext, provider: "codehost" | "portal"): Endpoints {
  if (provider === "codehost") {
    const base = ctx.config.oauthBaseUrls.codehost;
    return {
      authorization: `${base ?? "https://github.com"}/login/oauth/authorize`,
      token: `${base ?? "https://github.com"}/login/oauth/access_token`,
      api: base ? `${base}/api` : "https://api.github.com",
      userinfo: null,
      jwks: null,
      issuers: [],
    };
  }
  const base = ctx.config.oauthBaseUrls.portal;
  return {
    authorization: `${base ?? "https://accounts.google.com"}/o/oauth2/v2/auth`,
    token: `${base ?? "https://oauth2.googleapis.com"}/token`,
    userinfo: `${base ?? "https://openidconnect.googleapis.com"}/v1/userinfo`,
    jwks: `${base ?? "https://www.googleapis.com"}/oauth2/v3/certs`,
    // Google signs ID tokens with either spelling of its issuer.
    issuers: base ? [base] : ["https://accounts.google.com", "accounts.google.com"],
    api: null,
  };
}

/** The OIDC provider's endpoints from its discovery document, cached for an hour per issuer. */
async function discover(ctx: AppContext, issuer: string): Promise<Endpoints> {
  const wanted = issuer.replace(/\/+$/, "");
  const key = `oauth:discovery:${wanted}`;
  const cached = ctx.cache.get(key) as { endpoints: Endpoints; at: number } | undefined;
  if (cached && ctx.clock.now() - cached.at < DISCOVERY_TTL_MS) return cached.endpoints;
  let doc: Record<string, unknown>;
  try {
    doc = (await fetchJson(`${wanted}/.well-known/openid-configuration`)) as Record<string, unknown>;
  } catch (err) {
    throw new ProviderError(`OIDC discovery failed: ${(err as Error).message}`);
  }
  const str = (k: string) => (doc && typeof doc[k] === "string" ? (doc[k] as string) : null);
  const iss = str("issuer");
  // OpenID Connect Discovery 4.3: the document's issuer must be the one asked for.
  if (!iss || iss.replace(/\/+$/, "") !== wanted) throw new ProviderError("the discovery document names another issuer");
  const authorization = str("authorization_endpoint");
  const token = str("token_endpoint");
  const jwks = str("jwks_uri");
  if (!authorization || !token || !jwks) throw new ProviderError("the discovery document lacks endpoints");
  const endpoints: Endpoints = { authorization, token, jwks, userinfo: str("userinfo_endpoint"), issuers: [iss], api: null };
  ctx.cache.set(key, { endpoints, at: ctx.clock.now() });
  return endpoints;
}

async function endpointsOf(ctx: AppContext, provider: ProviderName): Promise<Endpoints> {
  return provider === "oidc" ? discover(ctx, (await getSettings(ctx)).oauth_oidc_issuer) : staticEndpoints(ctx, provider);
}

async function scopesOf(ctx: AppContext, provider: ProviderName): Promise<string[]> {
  if (provider === "codehost") return ["read:user", "user:email"];
  if (provider === "portal") return ["openid", "email", "profile"];
  const scopes = (await getSettings(ctx)).oauth_oidc_scopes.split(/\s+/).filter(Boolean);
  return scopes.includes("openid") ? scopes : ["openid", ...scopes];
}

/**
 * The provider's authorization URL for a new login: state, PKCE S256 challenge and, for
 * the ID-token providers, the nonce. Throws 400 without credentials, ProviderError when
 * OIDC discovery fails.
 */
export async function authorizationUrl(ctx: AppContext, provider: ProviderName, st: { state: string; codeVerifier: string; nonce: string }): Promise<URL> {
  const creds = await requireCredentials(ctx, provider);
  const ep = await endpointsOf(ctx, provider);
  const { OAuth2Client, CodeChallengeMethod } = arctic();
  const client = new OAuth2Client(creds.clientId, creds.clientSecret, redirectUri(ctx, provider));
  const url = client.createAuthorizationURLWithPKCE(ep.authorization, st.state, CodeChallengeMethod.S256, st.codeVerifier, await scopesOf(ctx, provider));
  if (provider !== "codehost") url.searchParams.set("nonce", st.nonce);
  return url;
}

/**
 * Exchanges the code (with the PKCE verifier) and reads the user: GitHub's `/user` and
 * `/user/emails`, or the verified ID token (plus userinfo when the token carries no email).
 */
export async function fetchProfile(ctx: AppContext, provider: ProviderName, code: string, st: OAuthStateRow): Promise<ProviderProfile> {
  const creds = credentialsOf(await getSettings(ctx), provider);
  if (!creds) throw new ProviderError(`OAuth provider "${provider}" is not configured`);
  const ep = await endpointsOf(ctx, provider);
  // RFC 6749 2.3.1: HTTP Basic client credentials are form-encoded before base64, which arctic
  // leaves to the caller; without it a secret with "+", "%", ":" or spaces is refused.
  const { OAuth2Client } = arctic();
  const client =
    creds.clientSecret === null
      ? new OAuth2Client(creds.clientId, null, redirectUri(ctx, provider))
      : new OAuth2Client(formEncode(creds.clientId), formEncode(creds.clientSecret), redirectUri(ctx, provider));
  let tokens: OAuth2Tokens;
  let accessToken: string;
  try {
    tokens = await client.validateAuthorizationCode(ep.token, code, st.codeVerifier);
    accessToken = tokens.accessToken();
  } catch (err) {
    throw new ProviderError(`code exchange failed: ${(err as Error).message}`);
  }
  try {
    if (provider === "codehost") return await githubProfile(ep.api!, accessToken);
    let idToken: string;
    try {
      idToken = tokens.idToken();
    } catch {
      throw new ProviderError("the provider returned no ID token");
    }
    const claims = await verifyIdToken(ctx, idToken, { issuers: ep.issuers, clientId: creds.clientId, nonce: st.nonce ?? "", jwksUri: ep.jwks! });
    if (typeof claims.email !== "string" && ep.userinfo) {
      const info = (await fetchJson(ep.userinfo, { headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" } })) as Record<string, unknown>;
      // OpenID Connect Core 5.3.2: userinfo for another subject must not be used.
      if (info && info.sub === claims.sub) Object.assign(claims, pick(info, ["email", "email_verified", "name", "picture"]));
    }
    return {
      id: claims.sub as string,
      email: typeof claims.email === "string" ? claims.email : null,
      emailVerified: claims.email_verified === true || claims.email_verified === "true",
      name: typeof claims.name === "string" ? claims.name : null,
      avatarUrl: typeof claims.picture === "string" ? claims.picture : null,
    };
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    if (err instanceof IdTokenError) throw new ProviderError(err.message);
    throw new ProviderError(`reading the user failed: ${(err as Error).message}`);
  }
}

function formEncode(v: string): string {
  return new URLSearchParams({ v }).toString().slice(2);
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

async function githubProfile(api: string, accessToken: string): Promise<ProviderProfile> {
  const headers = { authorization: `Bearer ${accessToken}`, accept: "application/vnd.github+json", "user-agent": "baas" };
  const user = (await fetchJson(`${api}/user`, { headers })) as Record<string, unknown>;
  if (!user || (typeof user.id !== "number" && typeof user.id !== "string")) throw new ProviderError("the provider returned no user id");
  const emails = await fetchJson(`${api}/user/emails`, { headers });
  let email: string | null = null;
  let emailVerified = false;
  // Only the primary address counts; GitHub says per address whether it checked it.
  const primary = Array.isArray(emails) ? emails.find((e) => e && typeof e === "object" && e.primary === true && typeof e.email === "string") : undefined;
  if (primary) {
    email = primary.email;
    emailVerified = primary.verified === true;
  } else if (typeof user.email === "string" && user.email) {
    email = user.email;
  }
  return {
    id: String(user.id),
    email,
    emailVerified,
    name: typeof user.name === "string" && user.name ? user.name : typeof user.login === "string" ? user.login : null,
    avatarUrl: typeof user.avatar_url === "string" ? user.avatar_url : null,
  };
}

/** Throws 403 `method_disabled` when OAuth login is turned off. */
export async function assertOAuthEnabled(ctx: AppContext): Promise<void> {
  if (!(await getSettings(ctx)).auth_oauth_enabled) throw new AppError(403, "method_disabled", "OAuth login is disabled on this server");
}
