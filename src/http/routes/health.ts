import { Elysia } from "elysia";
import { VERSION } from "../../version.ts";

/** `GET /health` (also under /api/v1). */
export function healthRoutes() {
  const health = () => ({ status: "ok", version: VERSION });
  return new Elysia().get("/health", health).get("/api/v1/health", health);
}
