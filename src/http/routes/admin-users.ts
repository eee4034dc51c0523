import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
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
} from "../../auth/admin-users.ts";
import { readJson } from "../body.ts";
import { bodyChecker, queryChecker, type BodyMessages } from "../check.ts";
import { doc, type RouteDoc } from "../doc.ts";
import { AdminUserCreateBody, AdminUserUpdateBody, ApiKeyBody, Items, SessionInfo, UserBody, UserListBody, UserListQuery, UserSecurityBody } from "../schemas.ts";
import { requireAdmin } from "../request.ts";
import { ADMIN } from "../../principal.ts";
import { idempotent } from "../idempotency.ts";
import { ROLES_MESSAGE } from "../../users/users.ts";

/** An admin route's documentation: its summary, its answer, and 404 for an unknown user. */
const admin = (summary: string, ok: RouteDoc["ok"], more: Partial<RouteDoc> = {}) =>
  doc({ summary, tag: "admin users", access: "admin", ok, errors: [404], ...more });
const OkId = t.Object({ ok: t.Literal(true), id: t.String() });
const userMessages = (schema: { properties: object }): BodyMessages => ({
  "*": ({ key }) => `unknown field "${key}"; allowed: ${Object.keys(schema.properties).join(", ")}`,
  roles: ROLES_MESSAGE,
  totp_enabled: "totp_enabled can only be set to false: users turn two-factor authentication on themselves",
});
const userListQuery = queryChecker(UserListQuery);
const createBody = bodyChecker(AdminUserCreateBody, userMessages(AdminUserCreateBody));
const updateBody = bodyChecker(AdminUserUpdateBody, userMessages(AdminUserUpdateBody));

/** `/api/v1/admin/users/*` and `/api/v1/admin/sessions/*`: user management for admins (CONTRACT §3). */
export function adminUserRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/users", ({ request }) => listUsers(ctx, userListQuery.parse(new URL(request.url).searchParams)), admin("List users (newest first)", UserListBody, { query: UserListQuery, errors: [400] }))
    .post("/users", async ({ request, set }) => {
      const raw = await readJson(request, max);
      // Not one transaction: the password's hash must not hold the write lock.
      return idempotent(ctx, { request, set }, ADMIN, raw, { status: 201, transaction: false }, () => adminCreateUser(ctx, createBody.parse(raw)));
    }, admin("Create a user (no mail sent)", UserBody, { body: AdminUserCreateBody, status: 201, errors: [409, 422], idempotent: true }))
    .get("/users/:id", ({ params }) => getUser(ctx, params.id), admin("One user (by id or email)", UserBody))
    .patch("/users/:id", async ({ request, params }) => adminUpdateUser(ctx, params.id, updateBody.defer(await readJson(request, max))), admin("Change a user", UserBody, { body: AdminUserUpdateBody, errors: [404, 409, 422] }))
    .delete("/users/:id", ({ params }) => deleteUser(ctx, params.id), admin("Delete a user", OkId))
    .get("/users/:id/sessions", ({ params }) => listSessionsOfUser(ctx, params.id), admin("A user's sessions", Items(SessionInfo)))
    .delete("/users/:id/sessions", ({ params }) => revokeSessionsOfUser(ctx, params.id), admin("Revoke every session of a user", t.Object({ ok: t.Literal(true), sessions_revoked: Type.Integer() })))
    .post("/users/:id/impersonate", ({ params }) => impersonateUser(ctx, params.id), admin("A 5-minute access token acting as the user", t.Object({ access_token: t.String(), expires_in: Type.Integer() }, { additionalProperties: true })))
    .post("/users/:id/unlock", ({ params }) => unlockUser(ctx, params.id), admin("Clear a lockout", UserBody))
    .get("/users/:id/security", ({ params }) => getUserSecurity(ctx, params.id), admin("2FA, lockout, linked accounts and API keys of a user", UserSecurityBody))
    .post("/users/:id/reset-2fa", ({ params }) => resetUserTotp(ctx, params.id), admin("Turn a user's 2FA off (answers the user's security state)", UserSecurityBody))
    .get("/users/:id/api-keys", ({ params }) => listApiKeysOfUser(ctx, params.id), admin("A user's API keys", Items(ApiKeyBody)))
    .delete("/users/:id/api-keys/:key", ({ params }) => adminRevokeApiKey(ctx, params.id, params.key), admin("Revoke a user's API key", OkId))
    .delete("/sessions/:sid", ({ params }) => adminRevokeSession(ctx, params.sid), admin("Revoke one session", OkId));
}
