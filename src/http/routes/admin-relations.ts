import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRelation, deleteRelation, listRelations } from "../../collections/relations.ts";
import { readJson } from "../body.ts";
import { relationCreate } from "../shared-checks.ts";
import { doc } from "../doc.ts";
import { Items, Ok, RelationBody, RelationCreateBody } from "../schemas.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/relations`: create, list and delete relations between collections (admin only). */
export function adminRelationRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/relations", () => listRelations(ctx), doc({ summary: "Every relation", tag: "admin", access: "admin", ok: Items(RelationBody) }))
    .post("/relations", async ({ request, set }) => {
      const res = await createRelation(ctx, relationCreate.parse(await readJson(request, max)));
      set.status = 201;
      return res;
    }, doc({ summary: "Create a relation between two collections", tag: "admin", access: "admin", body: RelationCreateBody, ok: RelationBody, status: 201, errors: [404, 409] }))
    .delete("/relations/:id", ({ params }) => deleteRelation(ctx, params.id), doc({ summary: "Delete a relation", tag: "admin", access: "admin", ok: Ok, errors: [404] }));
}
