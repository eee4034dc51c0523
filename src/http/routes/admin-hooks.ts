import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { hooksStatus, reloadHooks } from "../../ops/hook-files.ts";
import { doc } from "../doc.ts";
import { requireAdmin } from "../request.ts";
import { HooksBody } from "../schemas.ts";

const tag = "admin";

/** `/api/v1/admin/hooks`: the hook files loaded from HOOKS_DIR, and their reload (CONTRACT §15; admin only). */
export function adminHookRoutes(ctx: AppContext) {
  return new Elysia({ prefix: "/api/v1/admin" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/hooks", () => hooksStatus(ctx), doc({ summary: "The hook files in use, their handlers and load errors", tag, access: "admin", ok: HooksBody }))
    .post(
      "/hooks/reload",
      () => reloadHooks(ctx),
      doc({
        summary: "Load the hook files again",
        description: "A file that fails to load keeps its previous version; its `error` says why.",
        tag,
        access: "admin",
        ok: HooksBody,
      }),
    );
}
