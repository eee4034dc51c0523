import { Elysia } from "elysia";
import { adminLogin } from "../../auth/admin.ts";
import { ADMIN } from "../../auth/principal.ts";
import {
  collectionStats,
  createCollection,
  deleteCollection,
  getCollectionJson,
  listCollectionsJson,
  updateCollectionRules,
} from "../../collections/admin.ts";
import type { AppContext } from "../../context.ts";
import { asObject } from "../../errors.ts";
import { hardDeleteRecord } from "../../records/delete.ts";
import { settingsForDisplay, updateSettings } from "../../settings/settings.ts";
import { readJson } from "../body.ts";
import { clientInfo, requireAdmin } from "../request.ts";

/** `/api/v1/admin/*`: every route but login needs admin credentials, re-checked against the database each time. */
export function adminRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .post("/login", async ({ request, server }) => {
      const body = asObject(await readJson(request, max));
      return adminLogin(ctx, body.secret, clientInfo(request, server).ip ?? "unknown");
    })
    // Every route below (all but login) needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(({ request }) => {
      requireAdmin(ctx, request);
    })
    .get("/collections", () => listCollectionsJson(ctx))
    .post("/collections", async ({ request, set }) => {
      const res = createCollection(ctx, await readJson(request, max));
      set.status = 201;
      return res;
    })
    .get("/collections/:name", ({ params }) => getCollectionJson(ctx, params.name))
    .patch("/collections/:name", async ({ request, params }) => updateCollectionRules(ctx, params.name, await readJson(request, max)))
    .put("/collections/:name/rules", async ({ request, params }) => updateCollectionRules(ctx, params.name, await readJson(request, max)))
    .delete("/collections/:name", ({ params }) => deleteCollection(ctx, params.name))
    .get("/collections/:name/stats", ({ params }) => collectionStats(ctx, params.name))
    .delete("/collections/:name/records/:id", ({ params }) => hardDeleteRecord(ctx, params.name, params.id, ADMIN))
    .get("/settings", () => settingsForDisplay(ctx))
    .patch("/settings", async ({ request }) => updateSettings(ctx, await readJson(request, max)));
}
