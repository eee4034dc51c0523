import { Elysia, t } from "elysia";
import { createApiKey, listApiKeys, revokeApiKey } from "../../auth/api-keys.ts";
import { requestMagicLink, verifyMagicLink } from "../../auth/magic-link.ts";
import { forgotPassword, resetPassword } from "../../auth/reset.ts";
import { disableTotp, enableTotp, setupTotp, totpStatus, verifyTotpLogin } from "../../auth/totp.ts";
import { resendVerification, verifyEmail } from "../../auth/verification.ts";
import type { AppContext } from "../../context.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { clientInfo, principalOf, refuseAdminGuessOf } from "../request.ts";
import { idempotent } from "../idempotency.ts";
import {
  ApiKeyBody,
  CodeBody,
  EmailBody,
  Items,
  LoginResultBody,
  NameBody,
  Ok,
  ResetPasswordBody,
  SessionBody,
  TokenBody,
  TotpDisabledBody,
  TotpEnabledBody,
  TotpVerifyBody,
} from "../schemas.ts";

const tag = "auth";
const tokenBody = bodyChecker(TokenBody);
const emailBody = bodyChecker(EmailBody);
const resetBody = bodyChecker(ResetPasswordBody);
const codeBody = bodyChecker(CodeBody);
const totpVerifyBody = bodyChecker(TotpVerifyBody);
const nameBody = bodyChecker(NameBody, { name: "name is required (a non-empty string)" });

/** `/api/v1/auth/*` beyond password login: mail flows, 2FA and API keys. API keys are not accepted here. */
export function authExtraRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  const user = (request: Request) => principalOf(ctx, request, { allowApiKey: false });
  const json = (request: Request) => readJson(request, max);
  // The body of a public route, once a credential sent with it is known not to be a guess at the admin secret.
  const publicJson = async (request: Request) => {
    await refuseAdminGuessOf(ctx, request);
    return await json(request);
  };
  return new Elysia({ prefix: "/api/v1/auth" })
    .post(
      "/verify-email",
      async ({ request }) => verifyEmail(ctx, tokenBody.parse(await publicJson(request)).token),
      doc({ summary: "Confirm an address with the mailed token", tag, access: "public", body: TokenBody, ok: Ok, errors: [401] }),
    )
    .post(
      "/resend-verification",
      async ({ request }) => resendVerification(ctx, await user(request)),
      doc({ summary: "Mail the verification link again", tag, access: "user", ok: Ok, errors: [403, 409, 429] }),
    )
    .post(
      "/magic-link",
      async ({ request }) => requestMagicLink(ctx, emailBody.defer(await publicJson(request))),
      doc({ summary: "Mail a login link (answers ok whether or not the account exists)", tag, access: "public", body: EmailBody, ok: Ok, errors: [403, 422, 429] }),
    )
    .post(
      "/magic-link/verify",
      async ({ request, server }) => verifyMagicLink(ctx, tokenBody.defer(await publicJson(request)), clientInfo(ctx, request, server)),
      doc({ summary: "Log in with a mailed link's token", tag, access: "public", body: TokenBody, ok: LoginResultBody, errors: [401, 403] }),
    )
    .post(
      "/forgot-password",
      async ({ request }) => forgotPassword(ctx, emailBody.defer(await publicJson(request))),
      doc({ summary: "Mail a password reset link", tag, access: "public", body: EmailBody, ok: Ok, errors: [403, 422, 429] }),
    )
    .post(
      "/reset-password",
      async ({ request, server }) => resetPassword(ctx, resetBody.defer(await publicJson(request)), clientInfo(ctx, request, server)),
      doc({ summary: "Set a new password with a mailed token", tag, access: "public", body: ResetPasswordBody, ok: Ok, errors: [400, 403, 422, 429] }),
    )
    .get(
      "/2fa/status",
      async ({ request }) => totpStatus(ctx, await user(request)),
      doc({ summary: "Whether 2FA is on", tag, access: "user", ok: t.Object({ enabled: t.Boolean() }, { additionalProperties: true }), errors: [403] }),
    )
    .post(
      "/2fa/setup",
      async ({ request }) => setupTotp(ctx, await user(request)),
      doc({ summary: "Start 2FA setup: a secret and its otpauth URI", tag, access: "user", ok: t.Object({ otpauth_url: t.String() }, { additionalProperties: true }), errors: [403, 409] }),
    )
    .post(
      "/2fa/enable",
      async ({ request }) => {
        const p = await user(request);
        return enableTotp(ctx, p, codeBody.defer(await json(request)));
      },
      doc({ summary: "Turn 2FA on with a code of the new secret", tag, access: "user", body: CodeBody, ok: TotpEnabledBody, errors: [409] }),
    )
    .delete(
      "/2fa/disable",
      async ({ request }) => {
        const p = await user(request);
        return disableTotp(ctx, p, codeBody.defer(await json(request)));
      },
      doc({ summary: "Turn 2FA off with a current code", tag, access: "user", body: CodeBody, ok: TotpDisabledBody, errors: [409] }),
    )
    .post(
      "/2fa/verify",
      async ({ request, server }) => verifyTotpLogin(ctx, totpVerifyBody.parse(await publicJson(request)), clientInfo(ctx, request, server)),
      doc({ summary: "Finish a login with the 2FA code", tag, access: "public", body: TotpVerifyBody, ok: SessionBody, errors: [401, 403, 429] }),
    )
    .post(
      "/api-keys",
      async ({ request, set }) => {
        const p = await user(request);
        const raw = await json(request);
        return idempotent(ctx, { request, set }, p, raw, { status: 201, transaction: false }, () => createApiKey(ctx, p, nameBody.defer(raw)));
      },
      doc({ idempotent: true, summary: "Create an API key (its value is shown once)", tag, access: "user", body: NameBody, ok: t.Composite([ApiKeyBody, t.Object({ key: t.String() })], { additionalProperties: true }), status: 201, errors: [403] }),
    )
    .get("/api-keys", async ({ request }) => listApiKeys(ctx, await user(request)), doc({ summary: "The user's API keys", tag, access: "user", ok: Items(ApiKeyBody), errors: [403] }))
    .delete(
      "/api-keys/:id",
      async ({ request, params }) => revokeApiKey(ctx, await user(request), params.id),
      doc({ summary: "Revoke an API key", tag, access: "user", ok: Ok, errors: [403, 404] }),
    );
}
