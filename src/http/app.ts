import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { toErrorResponse } from "./plugins/errors.ts";
import { refuseImpersonationOnAuth, serveThrough } from "./request.ts";
import { requestLogger } from "./plugins/request-log.ts";
import { corsOptions, fastRecordReads } from "./fast-read.ts";
import { adminOpsRoutes } from "./routes/admin-ops.ts";
import { adminSearchRoutes } from "./routes/admin-search.ts";
import { adminRoutes } from "./routes/admin.ts";
import { adminRelationRoutes } from "./routes/admin-relations.ts";
import { adminWebhookRoutes } from "./routes/admin-webhooks.ts";
import { adminHookRoutes } from "./routes/admin-hooks.ts";
import { adminSchemaRoutes } from "./routes/admin-schema.ts";
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
import { fileRoutes } from "./routes/files.ts";
import { fnRoutes } from "./routes/fn.ts";

/**
 * Builds the HTTP app over a context. It never listens; `cli/commands/serve.ts` does. `requestLog: false`
 * leaves out the per-request log line (tests that read the log for other lines).
 */
export function createApp(ctx: AppContext, opts: { requestLog?: boolean } = {}) {
  const app = new Elysia();
  // Looked up when a limit keyed by client address needs it: the app's server once it listens (none under app.handle).
  serveThrough(ctx, () => app.server);
  // The wrapper sees the final response of every request (errors and unknown routes included); the fast
  // anonymous record read sits inside it, so its answers get their id and log line the same way.
  const fast = fastRecordReads(ctx, () => app.routes);
  const logged = opts.requestLog ?? true ? requestLogger(ctx.log) : null;
  app.wrap(((fn: (request: Request) => unknown) => (logged ? logged(fast(fn)) : fast(fn))) as Parameters<typeof app.wrap>[0]);
  return app
    .use(cors(corsOptions(ctx.config.corsOrigins)))
    .onError({ as: "global" }, ({ error, code, request }) => toErrorResponse(error, code, ctx.log, request))
    // Synchronous on purpose: an async hook here would make every request's handler async. It names no
    // `server`: a hook that does makes Elysia define a getter on every request's context.
    .onRequest(({ request }) => refuseImpersonationOnAuth(ctx, request))
    .use(healthRoutes(ctx))
    .use(openApiRoutes(ctx, () => app.routes))
    .use(consoleRoutes(ctx))
    .use(mailPageRoutes(ctx))
    .use(adminRoutes(ctx))
    .use(adminSearchRoutes(ctx))
    .use(adminOpsRoutes(ctx))
    .use(adminRelationRoutes(ctx))
    .use(adminWebhookRoutes(ctx))
    .use(adminHookRoutes(ctx))
    .use(adminSchemaRoutes(ctx))
    .use(authRoutes(ctx))
    .use(authExtraRoutes(ctx))
    .use(adminUserRoutes(ctx))
    .use(oauthRoutes(ctx))
    .use(realtimeRoutes(ctx))
    .use(fileRoutes(ctx))
    .use(fnRoutes(ctx))
    .use(queryRoutes(ctx))
    .use(recordWriteRoutes(ctx))
    .use(recordRoutes(ctx));
}

export type App = ReturnType<typeof createApp>;
