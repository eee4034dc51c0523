import { Elysia } from "elysia";
import { finishOAuthLogin, startOAuthLogin, type OAuthRedirect } from "../../auth/oauth/flow.ts";
import { listLinkedAccounts, unlinkAccount } from "../../auth/oauth/matching.ts";
import { requireProvider } from "../../auth/oauth/providers.ts";
import { readCookie, STATE_COOKIE, stateCookieHeader } from "../../auth/oauth/state.ts";
import type { AppContext } from "../../context.ts";
import { unauthorized } from "../../errors.ts";
import { doc } from "../doc.ts";
import { clientInfo, principalOf, refuseAdminGuessOf } from "../request.ts";
import { LinkedAccounts, Ok } from "../schemas.ts";

const tag = "oauth";

/** `/api/v1/auth/oauth/*`: provider login redirects, linked accounts and unlinking. */
export function oauthRoutes(ctx: AppContext) {
  const secure = ctx.config.publicUrl.startsWith("https:");
  const redirect = (r: OAuthRedirect) =>
    new Response(null, {
      status: 302,
      headers: { location: r.location, "set-cookie": stateCookieHeader(r.cookie, secure), "cache-control": "no-store" },
    });
  const userId = async (request: Request) => {
    const p = await principalOf(ctx, request, { allowApiKey: false });
    if (p.kind !== "user") throw unauthorized("a user access token is required");
    return p.userId;
  };
  return new Elysia({ prefix: "/api/v1/auth/oauth" })
    .get("/accounts", async ({ request }) => listLinkedAccounts(ctx, await userId(request)), doc({ summary: "The user's linked provider accounts", tag, access: "user", ok: LinkedAccounts }))
    .get("/:provider", async ({ params, request }) => {
      await refuseAdminGuessOf(ctx, request);
      return redirect(await startOAuthLogin(ctx, params.provider));
    }, doc({ summary: "Start a provider login (302 to the provider)", description: "400 when the provider has no client credentials set.", tag, access: "public", status: 302, errors: [400, 403, 404] }))
    .get("/:provider/callback", async ({ params, query, request, server }) => {
      await refuseAdminGuessOf(ctx, request);
      return redirect(await finishOAuthLogin(ctx, params.provider, query, readCookie(request.headers.get("cookie"), STATE_COOKIE), clientInfo(ctx, request, server)));
    },
      doc({ summary: "Where the provider sends the browser back (302 to APP_URL/auth/callback)", tag, access: "public", status: 302, errors: [400, 403, 404] }),
    )
    .delete("/:provider", async ({ params, request }) => {
      const id = await userId(request);
      return unlinkAccount(ctx, id, requireProvider(params.provider));
    }, doc({ summary: "Unlink a provider account", tag, access: "user", ok: Ok, errors: [404, 409] }));
}
