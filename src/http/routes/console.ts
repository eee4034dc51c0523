import { Elysia } from "elysia";
import { buildConsoleAssets, CONSOLE_PATH, serveConsoleFile, type Asset } from "../../console/serve.ts";
import type { AppContext } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { doc } from "../doc.ts";

/** The admin console at `/_/` (CONTRACT §9): static files only; it talks to the admin API like any client. */
export function consoleRoutes(ctx: AppContext) {
  // Loaded on the first console request: from source the bundle is built then (not on every
  // CLI start), and the API never waits for it.
  let assets: Promise<Map<string, Asset>> | null = null;
  const serve = async (request: Request, rest: string) => {
    assets ??= import("../../console/assets.ts")
      .then((m) => buildConsoleAssets(m.CONSOLE_BUNDLE, ctx.config.publicUrl))
      .catch((err) => {
        assets = null;
        throw err;
      });
    const res = serveConsoleFile(await assets, rest, request);
    if (!res) throw notFound("no such console file");
    return res;
  };
  const page = doc({ summary: "The admin console (static files)", tag: "pages", access: "public", media: "text/html", errors: [404] });
  const root = doc({
    summary: "Redirects to the admin console at /_/",
    tag: "pages",
    access: "public",
    status: 308,
    // `/_/` itself is the console's page: the wildcard route below documents it (see openApiPath).
    also: { path: "/_/", doc: { summary: "The admin console's page", tag: "pages", access: "public", media: "text/html" } },
  });
  return new Elysia()
    // Elysia treats /_ and /_/ alike; relative asset URLs need the slash, so /_ redirects.
    .get("/_", ({ request }) =>
      new URL(request.url).pathname === "/_" ? new Response(null, { status: 308, headers: { location: CONSOLE_PATH } }) : serve(request, ""),
      root,
    )
    .get("/_/*", ({ request, params }) => serve(request, params["*"]), page);
}
