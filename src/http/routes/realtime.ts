import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { asObject } from "../../errors.ts";
import { realtimeHub } from "../../realtime/hub.ts";
import { identityOf } from "../../realtime/identity.ts";
import { splitSubscribeParam } from "../../realtime/topics.ts";
import { readJson } from "../body.ts";
import { clientInfo, principalOf } from "../request.ts";

/** Realtime over Server-Sent Events (CONTRACT §10): `GET /api/v1/realtime` opens a stream, `POST` sets its topics. */
export function realtimeRoutes(ctx: AppContext) {
  const hub = realtimeHub(ctx);
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .get("/realtime", ({ request, server }) => {
      const identity = identityOf(ctx, principalOf(ctx, request), request);
      const params = new URL(request.url).searchParams;
      const subscribe = params.get("subscribe");
      const response = hub.open({
        identity,
        ip: clientInfo(request, server).ip ?? "unknown",
        // Browsers send the header when EventSource reconnects; the parameter serves a fresh EventSource.
        lastEventId: request.headers.get("last-event-id") ?? params.get("last_event_id"),
        subscribe: subscribe === null ? null : splitSubscribeParam(subscribe),
      });
      // A stream is idle between events by design: the 25 s ping keeps proxies open, the server's idle timeout does not apply.
      server?.timeout(request, 0);
      return response;
    })
    .post("/realtime", async ({ request }) => {
      const identity = identityOf(ctx, principalOf(ctx, request), request);
      const body = asObject(await readJson(request, max));
      return hub.subscribe(body.client_id, body.subscriptions, identity);
    });
}
