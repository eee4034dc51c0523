import { Elysia, t } from "elysia";
import type { AppContext } from "../../context.ts";
import { doc } from "../doc.ts";
import { buildOpenApi, type RouteInfo } from "../openapi.ts";

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every route of the app (public: it says
 * nothing a client could not learn by calling). `routes` gives the app's routes once all are added.
 */
export function openApiRoutes(ctx: AppContext, routes: () => readonly RouteInfo[]) {
  let body: string | null = null;
  return new Elysia().get(
    "/api/v1/openapi.json",
    () => {
      body ??= JSON.stringify(buildOpenApi(routes(), ctx.config.publicUrl));
      return new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } });
    },
    doc({ summary: "This document (OpenAPI 3.1)", tag: "server", access: "public", ok: t.Object({ openapi: t.String() }, { additionalProperties: true }) }),
  );
}
