import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRelation, deleteRelation, listRelations } from "../../relations/catalog.ts";
import { readJson } from "../body.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/relations`: create, list and delete relations between collections (admin only). */
export function adminRelationRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(({ request }) => {
      requireAdmin(ctx, request);
    })
    .get("/relations", () => listRelations(ctx))
    .post("/relations", async ({ request, set }) => {
      const res = createRelation(ctx, await readJson(request, max));
      set.status = 201;
      return res;
    })
    .delete("/relations/:id", ({ params }) => deleteRelation(ctx, params.id));
}
