import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { toErrorResponse } from "./plugins/errors.ts";
import { refuseImpersonationOnAuth } from "./request.ts";
import { adminSearchRoutes } from "./routes/admin-search.ts";
import { adminRoutes } from "./routes/admin.ts";
import { adminRelationRoutes } from "./routes/admin-relations.ts";
import { authRoutes } from "./routes/auth.ts";
import { authExtraRoutes } from "./routes/auth-extra.ts";
import { adminUserRoutes } from "./routes/admin-users.ts";
import { oauthRoutes } from "./routes/auth-oauth.ts";
import { healthRoutes } from "./routes/health.ts";
import { queryRoutes } from "./routes/query.ts";
import { recordRoutes } from "./routes/records.ts";
import { consoleRoutes } from "./routes/console.ts";
import { recordWriteRoutes } from "./routes/records-write.ts";
import { realtimeRoutes } from "./routes/realtime.ts";

/** Builds the HTTP app over a context. It never listens; `cli/commands/serve.ts` does. */
export function createApp(ctx: AppContext) {
  const origins = ctx.config.corsOrigins;
  return new Elysia()
    .use(
      cors({
        origin: origins === "*" ? true : origins,
        methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allowedHeaders: ["Content-Type", "Authorization", "X-Admin-Token", "X-API-Key"],
        exposeHeaders: ["Retry-After", "WWW-Authenticate"],
        credentials: origins !== "*",
        maxAge: 600,
      }),
    )
    .onError({ as: "global" }, ({ error, code, request }) => toErrorResponse(error, code, ctx.log, request))
    .onRequest(({ request }) => refuseImpersonationOnAuth(ctx, request))
    .use(healthRoutes())
    .use(consoleRoutes(ctx))
    .use(adminRoutes(ctx))
    .use(adminSearchRoutes(ctx))
    .use(adminRelationRoutes(ctx))
    .use(authRoutes(ctx))
    .use(authExtraRoutes(ctx))
    .use(adminUserRoutes(ctx))
    .use(oauthRoutes(ctx))
    .use(realtimeRoutes(ctx))
    .use(queryRoutes(ctx))
    .use(recordWriteRoutes(ctx))
    .use(recordRoutes(ctx));
}

export type App = ReturnType<typeof createApp>;
