import { Elysia } from "elysia";
import { VERSION } from "../../version.ts";
import { doc } from "../doc.ts";
import { HealthBody } from "../schemas.ts";

/** `GET /health` (also under /api/v1). */
export function healthRoutes() {
  const health = () => ({ status: "ok", version: VERSION });
  const d = doc({ summary: "Liveness and version", tag: "server", access: "public", ok: HealthBody });
  return new Elysia().get("/health", health, d).get("/api/v1/health", health, d);
}
