import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { adminLogin } from "../../auth/admin.ts";
import { ADMIN } from "../../principal.ts";
import {
  checkCollectionRule,
  collectionStats,
  createCollection,
  deleteCollection,
  getCollectionJson,
  listCollectionsJson,
  updateCollectionRules,
} from "../../collections/admin.ts";
import type { AppContext } from "../../context.ts";
import { hardDeleteRecord } from "../../records/delete.ts";
import { parseIfMatch } from "../../records/version.ts";
import { settingsForDisplay, updateSettings } from "../../settings/settings.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { settingsPatch } from "../shared-checks.ts";
import { doc } from "../doc.ts";
import { clientInfo, requireAdmin } from "../request.ts";
import { AdminTokenBody, CollectionBody, CollectionCreateBody, Items, Ok, RuleCheckBody, RulesBody, SecretBody, SettingsBody, SettingsPatch } from "../schemas.ts";

const tag = "admin";
const secretBody = bodyChecker(SecretBody);
const collectionCreateBody = bodyChecker(CollectionCreateBody, { name: "name is required" });
const rulesBody = bodyChecker(RulesBody, { "*": ({ key }) => `unknown key "${key}": expected rules or field_rules` });
const ruleCheckBody = bodyChecker(RuleCheckBody, { "*": ({ key }) => `unknown key "${key}": expected op and rule` });

/** `/api/v1/admin/*`: every route but login needs admin credentials, re-checked against the database each time. */
export function adminRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .post(
      "/login",
      async ({ request, server }) => adminLogin(ctx, secretBody.parse(await readJson(request, max)).secret, clientInfo(ctx, request, server).ip ?? "unknown"),
      doc({ summary: "Trade the admin secret for a 12-hour admin token", tag, access: "public", body: SecretBody, ok: AdminTokenBody, errors: [401, 429] }),
    )
    // Every route below (all but login) needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/collections", () => listCollectionsJson(ctx), doc({ summary: "Every collection", tag, access: "admin", ok: Items(CollectionBody) }))
    .post(
      "/collections",
      async ({ request, set }) => {
        const res = await createCollection(ctx, collectionCreateBody.parse(await readJson(request, max)));
        set.status = 201;
        return res;
      },
      doc({ summary: "Create a collection", tag, access: "admin", body: CollectionCreateBody, ok: CollectionBody, status: 201, errors: [409, 422] }),
    )
    .get("/collections/:name", ({ params }) => getCollectionJson(ctx, params.name), doc({ summary: "One collection", tag, access: "admin", ok: CollectionBody, errors: [404] }))
    .patch(
      "/collections/:name",
      async ({ request, params }) => updateCollectionRules(ctx, params.name, rulesBody.parse(await readJson(request, max))),
      doc({ summary: "Change a collection's rules and field rules", tag, access: "admin", body: RulesBody, ok: CollectionBody, errors: [404] }),
    )
    .put(
      "/collections/:name/rules",
      async ({ request, params }) => updateCollectionRules(ctx, params.name, rulesBody.parse(await readJson(request, max))),
      doc({ summary: "Change a collection's rules and field rules", tag, access: "admin", body: RulesBody, ok: CollectionBody, errors: [404] }),
    )
    .post(
      "/collections/:name/rules/check",
      async ({ request, params }) => checkCollectionRule(ctx, params.name, ruleCheckBody.parse(await readJson(request, max))),
      doc({ summary: "Check a rule without setting it (400 names the token and its position)", tag, access: "admin", body: RuleCheckBody, ok: Ok, errors: [404] }),
    )
    .delete("/collections/:name", ({ params }) => deleteCollection(ctx, params.name), doc({ summary: "Drop a collection, its table and relations", tag, access: "admin", ok: Ok, errors: [404, 409] }))
    .get(
      "/collections/:name/stats",
      ({ params }) => collectionStats(ctx, params.name),
      doc({ summary: "Record counts and sizes of a collection", tag, access: "admin", ok: t.Object({ row_count: Type.Integer(), last_write: t.Union([t.Number(), t.Null()]) }), errors: [404] }),
    )
    .delete(
      "/collections/:name/records/:id",
      ({ params, request }) => hardDeleteRecord(ctx, params.name, params.id, ADMIN, { ifMatch: parseIfMatch(request.headers.get("if-match")) }),
      doc({
        summary: "Hard-delete a record (active or soft-deleted); If-Match as for the data API",
        tag,
        access: "admin",
        ok: t.Object({ ok: t.Literal(true), id: t.String() }),
        errors: [404, 409, 412],
      }),
    )
    .get("/settings", () => settingsForDisplay(ctx), doc({ summary: "Every runtime setting (secrets masked)", tag, access: "admin", ok: SettingsBody }))
    .patch(
      "/settings",
      async ({ request }) => updateSettings(ctx, settingsPatch.parse(await readJson(request, max))),
      doc({ summary: "Change some runtime settings", tag, access: "admin", body: SettingsPatch, ok: SettingsBody }),
    );
}
