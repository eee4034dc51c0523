import { Elysia } from "elysia";
import { createIndexDef, dropIndexDef, listIndexes } from "../../collections/indexes.ts";
import type { AppContext } from "../../context.ts";
import { disableFts, enableFts, ftsStatus } from "../../search/fts.ts";
import { readJson } from "../body.ts";
import { indexCreate } from "../shared-checks.ts";
import { doc } from "../doc.ts";
import { FtsBody, IndexBody, IndexCreateBody, Items, Ok } from "../schemas.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/collections/:name/fts` and `…/indexes`: full-text index and column indexes. */
export function adminSearchRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin/collections/:name" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/fts", ({ params }) => ftsStatus(ctx, params.name), doc({ summary: "The collection's full-text index", tag: "admin", access: "admin", ok: FtsBody, errors: [404] }))
    .post("/fts", async ({ params, set }) => {
      const { status, created } = await enableFts(ctx, params.name);
      set.status = created ? 201 : 200;
      return status;
    }, doc({ summary: "Build the full-text index (200 when it exists)", tag: "admin", access: "admin", ok: FtsBody, status: 201, alsoOk: [200], errors: [404] }))
    .delete("/fts", ({ params }) => disableFts(ctx, params.name), doc({ summary: "Drop the full-text index", tag: "admin", access: "admin", ok: FtsBody, errors: [404] }))
    .get("/indexes", ({ params }) => listIndexes(ctx, params.name), doc({ summary: "The collection's indexes", tag: "admin", access: "admin", ok: Items(IndexBody), errors: [404] }))
    .post("/indexes", async ({ request, params, set }) => {
      const def = await createIndexDef(ctx, params.name, indexCreate.defer(await readJson(request, max)));
      set.status = 201;
      return def;
    }, doc({ summary: "Create an index", tag: "admin", access: "admin", body: IndexCreateBody, ok: IndexBody, status: 201, errors: [404, 409] }))
    .delete("/indexes/:index", ({ params }) => dropIndexDef(ctx, params.name, params.index), doc({ summary: "Drop an index", tag: "admin", access: "admin", ok: Ok, errors: [404] }));
}
