import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createWebhook, deleteWebhook, getWebhook, listAttempts, listWebhooks, retryDelivery, updateWebhook } from "../../webhooks/store.ts";
import { readJson } from "../body.ts";
import { doc } from "../doc.ts";
import { requireAdmin } from "../request.ts";
import { Items, Ok, WebhookAttemptBody, WebhookBody, WebhookCreateBody, WebhookDeliveryBody, WebhookPatchBody } from "../schemas.ts";
import { webhookCreate, webhookPatch } from "../shared-checks.ts";

const tag = "admin";

/** `/api/v1/admin/webhooks`: webhooks, their deliveries and retries (CONTRACT §15; admin only). */
export function adminWebhookRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/webhooks", () => listWebhooks(ctx), doc({ summary: "Every webhook (secrets masked)", tag, access: "admin", ok: Items(WebhookBody) }))
    .post(
      "/webhooks",
      async ({ request, set }) => {
        const res = await createWebhook(ctx, webhookCreate.parse(await readJson(request, max)));
        set.status = 201;
        return res;
      },
      doc({
        summary: "Create a webhook",
        description: "Its secret (given or made) is in this answer only; later answers show `********`.",
        tag,
        access: "admin",
        body: WebhookCreateBody,
        ok: WebhookBody,
        status: 201,
      }),
    )
    .get("/webhooks/:id", ({ params }) => getWebhook(ctx, params.id), doc({ summary: "One webhook", tag, access: "admin", ok: WebhookBody, errors: [404] }))
    .patch(
      "/webhooks/:id",
      async ({ request, params }) => updateWebhook(ctx, params.id, webhookPatch.parse(await readJson(request, max))),
      doc({ summary: "Change a webhook (url, collections, actions, secret, enabled)", tag, access: "admin", body: WebhookPatchBody, ok: WebhookBody, errors: [404] }),
    )
    .delete(
      "/webhooks/:id",
      ({ params }) => deleteWebhook(ctx, params.id),
      doc({ summary: "Delete a webhook and its pending deliveries", tag, access: "admin", ok: Ok, errors: [404] }),
    )
    .get(
      "/webhooks/:id/deliveries",
      ({ params }) => listAttempts(ctx, params.id),
      doc({ summary: "The webhook's last 100 delivery attempts, newest first", tag, access: "admin", ok: Items(WebhookAttemptBody), errors: [404] }),
    )
    .post(
      "/webhooks/:id/deliveries/:deliveryId/retry",
      ({ params }) => retryDelivery(ctx, params.id, params.deliveryId),
      doc({
        summary: "Send a delivery again now (pending, delivered or failed), with the same event id",
        tag,
        access: "admin",
        ok: WebhookDeliveryBody,
        errors: [404],
      }),
    );
}
