import { Elysia } from "elysia";
import { createIndexDef, dropIndexDef, listIndexes } from "../../collections/indexes.ts";
import type { AppContext } from "../../context.ts";
import { disableFts, enableFts, ftsStatus } from "../../search/fts.ts";
import { readJson } from "../body.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/collections/:name/fts` and `…/indexes`: full-text index and column indexes. */
export function adminSearchRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin/collections/:name" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(({ request }) => {
      requireAdmin(ctx, request);
    })
    .get("/fts", ({ params }) => ftsStatus(ctx, params.name))
    .post("/fts", async ({ params, set }) => {
      const { status, created } = await enableFts(ctx, params.name);
      set.status = created ? 201 : 200;
      return status;
    })
    .delete("/fts", ({ params }) => disableFts(ctx, params.name))
    .get("/indexes", ({ params }) => listIndexes(ctx, params.name))
    .post("/indexes", async ({ request, params, set }) => {
      const def = createIndexDef(ctx, params.name, await readJson(request, max));
      set.status = 201;
      return def;
    })
    .delete("/indexes/:index", ({ params }) => dropIndexDef(ctx, params.name, params.index));
}
