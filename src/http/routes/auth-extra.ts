import { Elysia } from "elysia";
import { createApiKey, listApiKeys, revokeApiKey } from "../../auth/api-keys.ts";
import { requestMagicLink, verifyMagicLink } from "../../auth/magic-link.ts";
import { forgotPassword, resetPassword } from "../../auth/reset.ts";
import { disableTotp, enableTotp, setupTotp, totpStatus, verifyTotpLogin } from "../../auth/totp.ts";
import { resendVerification, verifyEmail } from "../../auth/verification.ts";
import type { AppContext } from "../../context.ts";
import { asObject } from "../../errors.ts";
import { readJson } from "../body.ts";
import { clientInfo, principalOf } from "../request.ts";

/** `/api/v1/auth/*` beyond password login: mail flows, 2FA and API keys. API keys are not accepted here. */
export function authExtraRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  const user = (request: Request) => principalOf(ctx, request, { allowApiKey: false });
  const json = (request: Request) => readJson(request, max);
  return new Elysia({ prefix: "/api/v1/auth" })
    .post("/verify-email", async ({ request }) => verifyEmail(ctx, asObject(await json(request)).token))
    .post("/resend-verification", ({ request }) => resendVerification(ctx, user(request)))
    .post("/magic-link", async ({ request }) => requestMagicLink(ctx, await json(request)))
    .post("/magic-link/verify", async ({ request, server }) => verifyMagicLink(ctx, await json(request), clientInfo(request, server)))
    .post("/forgot-password", async ({ request }) => forgotPassword(ctx, await json(request)))
    .post("/reset-password", async ({ request }) => resetPassword(ctx, await json(request)))
    .get("/2fa/status", ({ request }) => totpStatus(ctx, user(request)))
    .post("/2fa/setup", ({ request }) => setupTotp(ctx, user(request)))
    .post("/2fa/enable", async ({ request }) => {
      const p = user(request);
      return enableTotp(ctx, p, await json(request));
    })
    .delete("/2fa/disable", async ({ request }) => {
      const p = user(request);
      return disableTotp(ctx, p, await json(request));
    })
    .post("/2fa/verify", async ({ request, server }) => verifyTotpLogin(ctx, await json(request), clientInfo(request, server)))
    .post("/api-keys", async ({ request, set }) => {
      const p = user(request);
      const res = createApiKey(ctx, p, await json(request));
      set.status = 201;
      return res;
    })
    .get("/api-keys", ({ request }) => listApiKeys(ctx, user(request)))
    .delete("/api-keys/:id", ({ request, params }) => revokeApiKey(ctx, user(request), params.id));
}
