import type { AppContext } from "../../context.ts";
import { getSetting } from "../../settings/settings.ts";
import type { ClientInfo } from "../sessions.ts";
import { finishLogin } from "../totp.ts";
import { matchOAuthUser, OAuthLoginError } from "./matching.ts";
import { assertOAuthEnabled, authorizationUrl, fetchProfile, ProviderError, requireCredentials, requireProvider } from "./providers.ts";
import { consumeOAuthState, createOAuthState } from "./state.ts";

/** Where a login step sends the browser, and the state cookie to set (null clears it). */
export interface OAuthRedirect {
  location: string;
  cookie: string | null;
}

/** The path under APP_URL of the page that receives a login's outcome (the server serves it when APP_URL is itself). */
export const OAUTH_RESULT_PATH = "/auth/callback";

/** `{APP_URL}/auth/callback?<params>`, the frontend page that receives the outcome. */
export function appCallbackUrl(ctx: AppContext, params: Record<string, string>): string {
  return `${ctx.config.appUrl}${OAUTH_RESULT_PATH}?${new URLSearchParams(params)}`;
}

/**
 * `GET /auth/oauth/:provider`: 404 unknown provider, 403 when OAuth is disabled, 400 without
 * credentials; otherwise the provider's authorization URL and a fresh state cookie.
 */
export async function startOAuthLogin(ctx: AppContext, name: string): Promise<OAuthRedirect> {
  const provider = requireProvider(name);
  await assertOAuthEnabled(ctx);
  await requireCredentials(ctx, provider);
  const st = await createOAuthState(ctx, provider);
  try {
    const url = await authorizationUrl(ctx, provider, st);
    return { location: url.toString(), cookie: st.cookie };
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    ctx.log.warn("oauth start failed", { provider, reason: err.message });
    return { location: appCallbackUrl(ctx, { error: "provider_error" }), cookie: null };
  }
}

/**
 * `GET /auth/oauth/:provider/callback`: checks the state against its cookie (single use),
 * exchanges the code, matches the user and ends at the frontend with tokens,
 * `totp_required` or `error=<reason>`. Only an unknown provider is an HTTP error (404).
 */
export async function finishOAuthLogin(
  ctx: AppContext,
  name: string,
  query: Record<string, string | undefined>,
  cookie: string | null,
  client: ClientInfo,
): Promise<OAuthRedirect> {
  const provider = requireProvider(name);
  const fail = (reason: string) => ({ location: appCallbackUrl(ctx, { error: reason }), cookie: null });
  // The state is spent first, so whatever happens next it cannot be tried again.
  const st = await consumeOAuthState(ctx, provider, query.state, cookie);
  if (!await getSetting(ctx, "auth_oauth_enabled")) return fail("method_disabled");
  if (!st) return fail("invalid_state");
  if (query.error || typeof query.code !== "string" || !query.code || query.code.length > 4096) {
    ctx.log.warn("oauth provider refused", { provider, error: query.error?.slice(0, 100) ?? "no code" });
    return fail("provider_error");
  }
  try {
    const profile = await fetchProfile(ctx, provider, query.code, st);
    const user = await matchOAuthUser(ctx, provider, profile);
    // A 2FA user gets the second step instead of a session (CONTRACT §7).
    const s = await finishLogin(ctx, user, client);
    if ("totp_required" in s) return { location: appCallbackUrl(ctx, { totp_required: "true", totp_token: s.totp_token }), cookie: null };
    return {
      location: appCallbackUrl(ctx, { access_token: s.access_token, refresh_token: s.refresh_token, expires_in: String(s.expires_in) }),
      cookie: null,
    };
  } catch (err) {
    if (err instanceof OAuthLoginError) return fail(err.reason);
    if (err instanceof ProviderError) {
      ctx.log.warn("oauth provider error", { provider, reason: err.message });
      return fail("provider_error");
    }
    throw err;
  }
}
