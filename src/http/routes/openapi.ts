import { Elysia, t } from "elysia";
import { openCollection } from "../../catalog/catalog.ts";
import type { Collection } from "../../catalog/types.ts";
import type { AppContext } from "../../context.ts";
import { doc } from "../doc.ts";
import { buildOpenApi, collectionOpenApi, type RouteInfo } from "../openapi.ts";
import { refuseAdminGuessOf, requireAdmin } from "../request.ts";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };
const OpenApiQuery = t.Object({
  collection: t.Optional(t.String({ description: "admin only: the data API of this collection, with its own fields" })),
});

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every route of the app (public: it says
 * nothing a client could not learn by calling); `?collection=` narrows it to one collection's data API
 * with its fields (admin only: field names are not public). `routes` gives the app's routes once all are added.
 */
export function openApiRoutes(ctx: AppContext, routes: () => readonly RouteInfo[]) {
  let generic: ReturnType<typeof buildOpenApi> | null = null;
  let body: string | null = null;
  return new Elysia().get(
    "/api/v1/openapi.json",
    async ({ request }) => {
      generic ??= buildOpenApi(routes(), ctx.config.publicUrl);
      const name = new URL(request.url).searchParams.get("collection");
      if (name === null) {
        await refuseAdminGuessOf(ctx, request);
        body ??= JSON.stringify(generic);
        return new Response(body, { headers: JSON_HEADERS });
      }
      await requireAdmin(ctx, request);
      const h = await openCollection(ctx, name);
      const targets = new Map<string, Collection>();
      for (const r of h.from) {
        const target = h.catalog.get(r.to_col);
        if (target) targets.set(target.name.toLowerCase(), target);
      }
      return new Response(JSON.stringify(collectionOpenApi(generic, h.col, h.from, targets)), { headers: JSON_HEADERS });
    },
    doc({
      summary: "This document (OpenAPI 3.1)",
      tag: "server",
      access: "public",
      query: OpenApiQuery,
      ok: t.Object({ openapi: t.String() }, { additionalProperties: true }),
      errors: [401, 403, 404],
    }),
  );
}
