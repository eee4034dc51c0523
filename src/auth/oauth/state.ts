import type { AppContext } from "../../context.ts";
import { randomToken, safeEqual, sha256 } from "../../crypto.ts";
import { insertOAuthState, pruneOAuthStates, takeOAuthState } from "../../tables/oauth-states.ts";

/** The cookie that binds a login's `state` to the browser that started it. */
export const STATE_COOKIE = "baas_oauth";
/** A login must come back within this time. */
export const STATE_TTL_MS = 10 * 60 * 1000;

/** What the start of a login hands to the provider and to the browser. */
export interface NewOAuthState {
  state: string;
  codeVerifier: string;
  nonce: string;
  /** Value of the HttpOnly cookie. */
  cookie: string;
}

/** What the callback gets back from a valid state. */
export interface OAuthStateRow {
  provider: string;
  codeVerifier: string;
  nonce: string | null;
}

/** Creates a state, PKCE verifier, nonce and cookie value; stores only hashes of the state and cookie. */
export async function createOAuthState(ctx: AppContext, provider: string): Promise<NewOAuthState> {
  const now = ctx.clock.now();
  const out: NewOAuthState = { state: randomToken(32), codeVerifier: (require("arctic") as typeof import("arctic")).generateCodeVerifier(), nonce: randomToken(24), cookie: randomToken(32) };
  await pruneOAuthStates(ctx.db, now);
  await insertOAuthState(ctx.db, { stateHash: sha256(out.state), provider, codeVerifier: out.codeVerifier, nonce: out.nonce, cookieHash: sha256(out.cookie), now, expiresAt: now + STATE_TTL_MS });
  return out;
}

/**
 * Takes a state out of the store (single use: it is deleted whether or not it matches),
 * and returns it only when it is for this provider, not expired, and presented by the
 * browser holding its cookie; otherwise null. The cookie check stops a login CSRF where
 * an attacker's own callback URL is opened in the victim's browser.
 */
export async function consumeOAuthState(ctx: AppContext, provider: string, state: unknown, cookie: string | null): Promise<OAuthStateRow | null> {
  if (typeof state !== "string" || !state || state.length > 512) return null;
  const row = await takeOAuthState(ctx.db, sha256(state));
  if (!row || row.provider !== provider || row.expires_at <= ctx.clock.now()) return null;
  if (!cookie || !safeEqual(sha256(cookie), row.cookie_hash)) return null;
  return { provider: row.provider, codeVerifier: row.code_verifier, nonce: row.nonce };
}

/** Reads one cookie from a Cookie header. */
export function readCookie(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim() || null;
  }
  return null;
}

/** The Set-Cookie value carrying (or, with null, clearing) the state cookie. */
export function stateCookieHeader(value: string | null, secure: boolean): string {
  // SameSite=Lax: the provider sends the browser back with a top-level GET, which Lax allows; Strict would drop it.
  const attrs = ["Path=/api/v1/auth/oauth", "HttpOnly", "SameSite=Lax", `Max-Age=${value ? STATE_TTL_MS / 1000 : 0}`];
  if (secure) attrs.push("Secure");
  return `${STATE_COOKIE}=${value ?? ""}; ${attrs.join("; ")}`;
}
