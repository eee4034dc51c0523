import { Elysia } from "elysia";
import { login, logout, logoutAll, me, register, updateMe } from "../../auth/account.ts";
import { deleteOwnAccount, exportOwnData } from "../../ops/own-data.ts";
import { refreshSession } from "../../auth/sessions.ts";
import type { AppContext } from "../../context.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { clientInfo, principalOf, refuseAdminGuessOf } from "../request.ts";
import { idempotent } from "../idempotency.ts";
import { DeleteAccountBody, DeletedAccountBody, LoginResultBody, MetadataBody, OwnDataBody, Ok, RefreshBody, RegisterBody, SessionBody, UserBody, Credentials } from "../schemas.ts";

const tag = "auth";
const registerBody = bodyChecker(RegisterBody);
const credentials = bodyChecker(Credentials);
const refreshBody = bodyChecker(RefreshBody);
const deleteAccountBody = bodyChecker(DeleteAccountBody);
const metadataBody = bodyChecker(MetadataBody, { "*": ({ key }) => `"${key}" cannot be changed here; only metadata` });

/** `/api/v1/auth/*`: API keys are not accepted here. */
export function authRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  const user = (request: Request) => principalOf(ctx, request, { allowApiKey: false });
  return new Elysia({ prefix: "/api/v1/auth" })
    .post(
      "/register",
      async ({ request, server, set }) => {
        await refuseAdminGuessOf(ctx, request);
        const raw = await readJson(request, max);
        // Not one transaction: the password's hash and the verification mail must not hold the write lock.
        return idempotent(ctx, { request, set }, null, raw, { status: 201, transaction: false }, () =>
          register(ctx, registerBody.parse(raw), clientInfo(ctx, request, server)),
        );
      },
      doc({ idempotent: true, summary: "Create an account and a session", tag, access: "public", body: RegisterBody, ok: SessionBody, status: 201, errors: [403, 409, 422, 429] }),
    )
    .post(
      "/login",
      async ({ request, server }) => {
        await refuseAdminGuessOf(ctx, request);
        return login(ctx, credentials.parse(await readJson(request, max)), clientInfo(ctx, request, server));
      },
      doc({ summary: "Password login: a session, or the 2FA step", tag, access: "public", body: Credentials, ok: LoginResultBody, errors: [401, 403, 429] }),
    )
    .post(
      "/refresh",
      async ({ request }) => {
        await refuseAdminGuessOf(ctx, request);
        return refreshSession(ctx, refreshBody.parse(await readJson(request, max)).refresh_token);
      },
      doc({ summary: "Trade a refresh token for a new pair (rotation)", tag, access: "public", body: RefreshBody, ok: SessionBody, errors: [401, 403] }),
    )
    .post("/logout", async ({ request }) => logout(ctx, await user(request)), doc({ summary: "End this session", tag, access: "user", ok: Ok }))
    .post("/logout-all", async ({ request }) => logoutAll(ctx, await user(request)), doc({ summary: "End every session of the user", tag, access: "user", ok: Ok }))
    .get("/me", async ({ request }) => me(ctx, await user(request)), doc({ summary: "The current user", tag, access: "user", ok: UserBody, errors: [403] }))
    .patch(
      "/me",
      async ({ request }) => {
        const p = await user(request);
        return updateMe(ctx, p, metadataBody.defer(await readJson(request, max)));
      },
      doc({ summary: "Replace the user's metadata", tag, access: "user", body: MetadataBody, ok: UserBody, errors: [403] }),
    )
    .get(
      "/me/export",
      async ({ request }) => exportOwnData(ctx, await user(request)),
      doc({ summary: "Download the user and every record they own, by collection", tag, access: "user", ok: OwnDataBody, errors: [403] }),
    )
    .delete(
      "/me",
      async ({ request, server }) => {
        const p = await user(request);
        return deleteOwnAccount(ctx, p, deleteAccountBody.defer((await readJson(request, max)) ?? {}), clientInfo(ctx, request, server));
      },
      doc({ summary: "Delete the account and every record it owns", tag, access: "user", body: DeleteAccountBody, ok: DeletedAccountBody, errors: [400, 403, 409, 429] }),
    );
}
