import { Elysia } from "elysia";
import { buildConsoleAssets, CONSOLE_PATH, serveConsoleFile } from "../../console/serve.ts";
import type { AppContext } from "../../context.ts";
import { notFound } from "../../errors.ts";

/** The admin console at `/_/` (CONTRACT §9): static files only; it talks to the admin API like any client. */
export function consoleRoutes(ctx: AppContext) {
  const assets = buildConsoleAssets(ctx.config.publicUrl);
  const serve = (request: Request, rest: string) => {
    const res = serveConsoleFile(assets, rest, request);
    if (!res) throw notFound("no such console file");
    return res;
  };
  return new Elysia()
    // Elysia treats /_ and /_/ alike; relative asset URLs need the slash, so /_ redirects.
    .get("/_", ({ request }) =>
      new URL(request.url).pathname === "/_" ? new Response(null, { status: 308, headers: { location: CONSOLE_PATH } }) : serve(request, ""),
    )
    .get("/_/*", ({ request, params }) => serve(request, params["*"]));
}
