import { Elysia } from "elysia";
import { OAUTH_RESULT_PATH } from "../../auth/oauth/flow.ts";
import { LINK_PATHS } from "../../auth/verification.ts";
import type { AppContext } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { PAGE_HEADERS, renderLandingPage, type PageKind } from "../../mail/pages.ts";
import type { MailKind } from "../../mail/templates.ts";
import { getSetting } from "../../settings/settings.ts";
import { doc } from "../doc.ts";

/** True when a client asks for JSON rather than a page (an API client probing the path keeps its JSON 404). */
function wantsJson(request: Request): boolean {
  const accept = request.headers.get("accept") ?? "";
  return /application\/json/i.test(accept) && !/text\/html/i.test(accept);
}

/**
 * `GET /auth/verify-email`, `/auth/reset-password`, `/auth/magic-link` (`?token=`): the pages mail
 * links open, and `GET /auth/callback`, where an OAuth login ends (`?access_token=…`, `?totp_required=true…`
 * or `?error=…`), when APP_URL is the server itself, i.e. no frontend of its own handles them. With a
 * frontend at APP_URL these paths stay unknown here (404), as before.
 */
export function mailPageRoutes(ctx: AppContext) {
  const apiBase = `${new URL(ctx.config.publicUrl).pathname.replace(/\/+$/, "")}/api/v1`;
  const page = (kind: PageKind) => async ({ request }: { request: Request }) => {
    if (ctx.config.appUrl !== ctx.config.publicUrl || wantsJson(request)) throw notFound("no such endpoint");
    return new Response(renderLandingPage(kind, { appName: await getSetting(ctx, "app_name"), apiBase }), { headers: PAGE_HEADERS });
  };
  const d = doc({ summary: "The page a mail link or an OAuth login opens (404 with a frontend at APP_URL)", tag: "pages", access: "public", media: "text/html", errors: [404] });
  let app = new Elysia();
  for (const kind of Object.keys(LINK_PATHS) as MailKind[]) app = app.get(LINK_PATHS[kind], page(kind), d);
  return app.get(OAUTH_RESULT_PATH, page("oauth_callback"), d);
}
