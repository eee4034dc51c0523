import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { toErrorResponse } from "./plugins/errors.ts";
import { refuseImpersonationOnAuth, rememberServer } from "./request.ts";
import { requestLogger } from "./plugins/request-log.ts";
import { adminOpsRoutes } from "./routes/admin-ops.ts";
import { adminSearchRoutes } from "./routes/admin-search.ts";
import { adminRoutes } from "./routes/admin.ts";
import { adminRelationRoutes } from "./routes/admin-relations.ts";
import { authRoutes } from "./routes/auth.ts";
import { authExtraRoutes } from "./routes/auth-extra.ts";
import { adminUserRoutes } from "./routes/admin-users.ts";
import { oauthRoutes } from "./routes/auth-oauth.ts";
import { healthRoutes } from "./routes/health.ts";
import { mailPageRoutes } from "./routes/mail-pages.ts";
import { queryRoutes } from "./routes/query.ts";
import { recordRoutes } from "./routes/records.ts";
import { consoleRoutes } from "./routes/console.ts";
import { recordWriteRoutes } from "./routes/records-write.ts";
import { realtimeRoutes } from "./routes/realtime.ts";
import { openApiRoutes } from "./routes/openapi.ts";

/**
 * Builds the HTTP app over a context. It never listens; `cli/commands/serve.ts` does. `requestLog: false`
 * leaves out the per-request log line (tests that read the log for other lines).
 */
export function createApp(ctx: AppContext, opts: { requestLog?: boolean } = {}) {
  const app = new Elysia();
  // The wrapper sees the final response of every request (errors and unknown routes included).
  if (opts.requestLog ?? true) app.wrap(requestLogger(ctx.log) as Parameters<typeof app.wrap>[0]);
  const origins = ctx.config.corsOrigins;
  return app
    .use(
      cors({
        origin: origins === "*" ? true : origins,
        methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allowedHeaders: ["Content-Type", "Authorization", "X-Admin-Token", "X-API-Key", "X-Request-Id"],
        exposeHeaders: ["Retry-After", "WWW-Authenticate", "X-Request-Id"],
        credentials: origins !== "*",
        maxAge: 600,
      }),
    )
    .onError({ as: "global" }, ({ error, code, request }) => toErrorResponse(error, code, ctx.log, request))
    // Synchronous on purpose: an async hook here would make every request's handler async.
    .onRequest(({ request, server }) => {
      rememberServer(request, server);
      refuseImpersonationOnAuth(ctx, request);
    })
    .use(healthRoutes())
    .use(openApiRoutes(ctx, () => app.routes))
    .use(consoleRoutes(ctx))
    .use(mailPageRoutes(ctx))
    .use(adminRoutes(ctx))
    .use(adminSearchRoutes(ctx))
    .use(adminOpsRoutes(ctx))
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
