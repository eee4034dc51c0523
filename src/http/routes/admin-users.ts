import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import {
  adminCreateUser,
  adminRevokeApiKey,
  adminRevokeSession,
  adminUpdateUser,
  deleteUser,
  getUser,
  getUserSecurity,
  impersonateUser,
  listApiKeysOfUser,
  listSessionsOfUser,
  listUsers,
  resetUserTotp,
  revokeSessionsOfUser,
  unlockUser,
} from "../../users/admin-users.ts";
import { readJson } from "../body.ts";
import { requireAdmin } from "../request.ts";

/** `/api/v1/admin/users/*` and `/api/v1/admin/sessions/*`: user management for admins (CONTRACT §3). */
export function adminUserRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/users", ({ request }) => {
      const q = new URL(request.url).searchParams;
      return listUsers(ctx, { search: q.get("search") ?? undefined, limit: q.get("limit") ?? undefined, page: q.get("page") ?? undefined });
    })
    .post("/users", async ({ request, set }) => {
      const res = await adminCreateUser(ctx, await readJson(request, max));
      set.status = 201;
      return res;
    })
    .get("/users/:id", ({ params }) => getUser(ctx, params.id))
    .patch("/users/:id", async ({ request, params }) => adminUpdateUser(ctx, params.id, await readJson(request, max)))
    .delete("/users/:id", ({ params }) => deleteUser(ctx, params.id))
    .get("/users/:id/sessions", ({ params }) => listSessionsOfUser(ctx, params.id))
    .delete("/users/:id/sessions", ({ params }) => revokeSessionsOfUser(ctx, params.id))
    .post("/users/:id/impersonate", ({ params }) => impersonateUser(ctx, params.id))
    .post("/users/:id/unlock", ({ params }) => unlockUser(ctx, params.id))
    .get("/users/:id/security", ({ params }) => getUserSecurity(ctx, params.id))
    .post("/users/:id/reset-2fa", ({ params }) => resetUserTotp(ctx, params.id))
    .get("/users/:id/api-keys", ({ params }) => listApiKeysOfUser(ctx, params.id))
    .delete("/users/:id/api-keys/:key", ({ params }) => adminRevokeApiKey(ctx, params.id, params.key))
    .delete("/sessions/:sid", ({ params }) => adminRevokeSession(ctx, params.sid));
}
