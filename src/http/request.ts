import type { Server } from "bun";
import { isImpersonationToken, refuseAdminGuess, resolvePrincipal } from "../auth/principal.ts";
import { type Principal } from "../principal.ts";
import type { ClientInfo } from "../auth/sessions.ts";
import type { AppContext } from "../context.ts";
import { AppError, forbidden } from "../errors.ts";
import { clientAddress } from "../ip.ts";

// The server a context's app listens on (routes see only the Request). The client address is looked up from it
// only when a limit keyed by address needs it, not for every request; nothing is noted per request.
const servers = new WeakMap<AppContext, () => Server<unknown> | null | undefined>();

/** Tells the requests of `ctx` which server they come through (createApp: its app's server once it listens). */
export function serveThrough(ctx: AppContext, server: () => Server<unknown> | null | undefined): void {
  servers.set(ctx, server);
}

/** The principal of a request from its headers. API keys act only outside `/auth/*`. */
export function principalOf(ctx: AppContext, request: Request, opts: { allowApiKey?: boolean } = {}): Promise<Principal> {
  const h = request.headers;
  return resolvePrincipal(
    ctx,
    { authorization: h.get("authorization"), adminToken: h.get("x-admin-token"), apiKey: h.get("x-api-key") },
    { allowApiKey: opts.allowApiKey ?? true, ip: () => clientInfo(ctx, request).ip ?? "unknown" },
  );
}

/**
 * On a route that acts for no caller: a credential that can only be a guess at the admin secret is 401 and counts
 * toward the admin limit, as on every other route (refuseAdminGuess). Settles at once without such a header.
 */
export function refuseAdminGuessOf(ctx: AppContext, request: Request): Promise<void> | undefined {
  const h = request.headers;
  const authorization = h.get("authorization");
  const adminToken = h.get("x-admin-token");
  if (!authorization && !adminToken) return undefined;
  return refuseAdminGuess(ctx, { authorization, adminToken }, () => clientInfo(ctx, request).ip ?? "unknown");
}

/** 401 without credentials or with wrong ones, 403 with a user's; passes admin credentials. */
export async function requireAdmin(ctx: AppContext, request: Request): Promise<Principal> {
  const h = request.headers;
  if (!h.get("authorization") && !h.get("x-admin-token"))
    throw new AppError(401, "unauthorized", "admin credentials required");
  const p = await principalOf(ctx, request, { allowApiKey: false });
  if (p.kind !== "admin") throw new AppError(403, "forbidden", "admin credentials required");
  return p;
}

/**
 * The caller's address and user agent, for sessions and every limit kept per address (admin-secret
 * guesses, realtime streams and topics). The address is the socket's peer, or behind a proxy named in
 * TRUST_PROXY the client it forwarded for (clientAddress). `server` defaults to the one `ctx` serves through.
 */
export function clientInfo(ctx: AppContext, request: Request, server?: Server<unknown> | null): ClientInfo {
  let peer: string | null = null;
  try {
    peer = (server ?? servers.get(ctx)?.())?.requestIP(request)?.address ?? null;
  } catch {}
  const trusted = ctx.config.trustProxy;
  const ip = clientAddress(trusted, peer, trusted.length ? request.headers.get("x-forwarded-for") : null);
  return { ip, userAgent: request.headers.get("user-agent"), signal: request.signal };
}

/**
 * An admin impersonation token acts on the data API and `GET /auth/me` only. IMPORTANT: on any
 * other `/auth/*` call it is refused (403), else whoever holds the 5-minute token could make it
 * permanent (an API key), set up 2FA, change the user or log them out everywhere.
 */
export function refuseImpersonationOnAuth(ctx: AppContext, request: Request): void {
  const authorization = request.headers.get("authorization");
  if (!authorization) return;
  // A path without "auth", an escape or a dot cannot name an /auth route however it is written:
  // most requests stop here without parsing the URL.
  const url = request.url;
  const rest = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  if (!/auth|%|\./i.test(rest.split("?", 1)[0])) return;
  let path = new URL(url).pathname;
  try {
    path = decodeURIComponent(path);
  } catch {}
  path = path.replace(/\/+/g, "/").replace(/\/$/, "").toLowerCase();
  if (path !== "/api/v1/auth" && !path.startsWith("/api/v1/auth/")) return;
  if (request.method === "GET" && path === "/api/v1/auth/me") return;
  if (isImpersonationToken(ctx, authorization))
    throw forbidden("an impersonation token acts only on the data API and GET /auth/me");
}
