import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRelation, deleteRelation, listRelations } from "../../relations/catalog.ts";
import { readJson } from "../body.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/relations`: create, list and delete relations between collections (admin only). */
export function adminRelationRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .get("/relations", ({ request }) => {
      requireAdmin(ctx, request);
      return listRelations(ctx);
    })
    .post("/relations", async ({ request, set }) => {
      requireAdmin(ctx, request);
      const res = createRelation(ctx, await readJson(request, max));
      set.status = 201;
      return res;
    })
    .delete("/relations/:id", ({ request, params }) => {
      requireAdmin(ctx, request);
      return deleteRelation(ctx, params.id);
    });
}
