import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../errors.ts";
import { readiness } from "../../ops/readiness.ts";
import { VERSION } from "../../version.ts";
import { doc } from "../doc.ts";
import { HealthBody, ReadyBody } from "../schemas.ts";

/**
 * `GET /health` (liveness: the process answers, 200 whatever the database does) and `GET /ready` (readiness:
 * 200 once started while the database answers, else 503 with a `reason`), both also under /api/v1.
 */
export function healthRoutes(ctx: AppContext) {
  // Credentials sent here are not looked at (no guess at the admin secret is counted): a probe answers what the
  // process and the database are doing, whatever it sends, and /health never asks the database.
  const health = () => ({ status: "ok", version: VERSION });
  const ready = async () => {
    const r = await readiness(ctx);
    if (!r.ready) throw new AppError(503, "unavailable", r.message, { reason: r.reason }, { "retry-after": "1" });
    return { status: "ready" as const, version: VERSION };
  };
  const d = doc({ summary: "Liveness and version", tag: "server", access: "public", ok: HealthBody });
  const r = doc({
    summary: "Readiness: started, and the database answers",
    description:
      "200 once the server has started while its database answers (checked at most once a second, within 2 s); " +
      'else 503 `{ error, code: "unavailable", reason }` with `reason` `starting`, `stopping` or `database_unavailable`. ' +
      "For load balancers and orchestrators; `/health` stays 200 while the process runs.",
    tag: "server",
    access: "public",
    ok: ReadyBody,
    errors: [503],
  });
  return new Elysia().get("/health", health, d).get("/api/v1/health", health, d).get("/ready", ready, r).get("/api/v1/ready", ready, r);
}
