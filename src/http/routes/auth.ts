import { Elysia } from "elysia";
import { login, logout, logoutAll, me, register, updateMe } from "../../auth/account.ts";
import { refreshSession } from "../../auth/sessions.ts";
import type { AppContext } from "../../context.ts";
import { asObject } from "../../errors.ts";
import { readJson } from "../body.ts";
import { clientInfo, principalOf } from "../request.ts";

/** `/api/v1/auth/*`: API keys are not accepted here. */
export function authRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  const user = (request: Request) => principalOf(ctx, request, { allowApiKey: false });
  return new Elysia({ prefix: "/api/v1/auth" })
    .post("/register", async ({ request, server, set }) => {
      const res = await register(ctx, await readJson(request, max), clientInfo(request, server));
      set.status = 201;
      return res;
    })
    .post("/login", async ({ request, server }) => login(ctx, await readJson(request, max), clientInfo(request, server)))
    .post("/refresh", async ({ request }) => {
      const body = asObject(await readJson(request, max));
      return refreshSession(ctx, body.refresh_token);
    })
    .post("/logout", ({ request }) => logout(ctx, user(request)))
    .post("/logout-all", ({ request }) => logoutAll(ctx, user(request)))
    .get("/me", ({ request }) => me(ctx, user(request)))
    .patch("/me", async ({ request }) => {
      const p = user(request);
      return updateMe(ctx, p, await readJson(request, max));
    });
}
