import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { realtimeHub } from "../../realtime/hub.ts";
import { identityOf } from "../../realtime/identity.ts";
import { splitSubscribeParam } from "../../realtime/topics.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { RealtimeQuery, SubscribeBody, SubscribedBody } from "../schemas.ts";
import { clientInfo, principalOf } from "../request.ts";

const subscribeBody = bodyChecker(SubscribeBody);

/** Realtime over Server-Sent Events (CONTRACT §10): `GET /api/v1/realtime` opens a stream, `POST` sets its topics. */
export function realtimeRoutes(ctx: AppContext) {
  const hub = realtimeHub(ctx);
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .get("/realtime", async ({ request, server }) => {
      const identity = await identityOf(ctx, await principalOf(ctx, request), request);
      const params = new URL(request.url).searchParams;
      const subscribe = params.get("subscribe");
      const response = await hub.open({
        identity,
        ip: clientInfo(ctx, request, server).ip ?? "unknown",
        // Browsers send the header when EventSource reconnects; the parameter serves a fresh EventSource.
        lastEventId: request.headers.get("last-event-id") ?? params.get("last_event_id"),
        subscribe: subscribe === null ? null : splitSubscribeParam(subscribe),
        // Once the stream ends, a reader that takes nothing more for 30 s (a stalled one) is cut off.
        onEnd: () => server?.timeout(request, 30),
      });
      // A stream is quiet between events by design (the server's idle timeout, which writes do not
      // reset, would cut it): the 25 s ping keeps proxies open, and a stream ends on its own terms.
      server?.timeout(request, 0);
      return response;
    }, doc({
      summary: "Open an event stream (first event: connect with the client_id)",
      tag: "realtime",
      access: "data",
      query: RealtimeQuery,
      media: "text/event-stream",
      errors: [400, 429],
    }))
    .post("/realtime", async ({ request }) => {
      const identity = await identityOf(ctx, await principalOf(ctx, request), request);
      const body = subscribeBody.parse(await readJson(request, max));
      return hub.subscribe(body.client_id, body.subscriptions, identity);
    }, doc({ summary: "Set a stream's topics and bind the caller's identity to it", tag: "realtime", access: "data", body: SubscribeBody, ok: SubscribedBody }));
}
