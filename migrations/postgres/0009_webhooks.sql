-- Webhooks, their outbox and the attempts' history (see ../0009_webhooks.sql).
CREATE TABLE "_webhooks" (
  "id" text PRIMARY KEY NOT NULL,
  "url" text NOT NULL,
  "collections" text NOT NULL,
  "actions" text NOT NULL,
  "secret" text NOT NULL,
  "enabled" boolean NOT NULL DEFAULT true,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_webhook_deliveries" (
  "id" text PRIMARY KEY NOT NULL,
  "webhook_id" text NOT NULL REFERENCES "_webhooks"("id") ON DELETE CASCADE,
  "event_id" text NOT NULL,
  "collection" text NOT NULL,
  "action" text NOT NULL,
  "record_id" text NOT NULL,
  "body" text NOT NULL,
  "status" text NOT NULL,
  "attempts" bigint NOT NULL DEFAULT 0,
  "next_at" bigint NOT NULL,
  "claim" text,
  "expires_at" bigint NOT NULL,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_webhook_deliveries_due" ON "_webhook_deliveries" ("webhook_id", "next_at") WHERE "status" = 'pending';
--> statement-breakpoint
-- Finished deliveries, for pruning: a row enters it when it is delivered or failed, not when the change writes it.
CREATE INDEX "_webhook_deliveries_done" ON "_webhook_deliveries" ("webhook_id") WHERE "status" <> 'pending';
--> statement-breakpoint
CREATE TABLE "_webhook_attempts" (
  "id" text PRIMARY KEY NOT NULL,
  "delivery_id" text NOT NULL REFERENCES "_webhook_deliveries"("id") ON DELETE CASCADE,
  "webhook_id" text NOT NULL,
  "attempt" bigint NOT NULL,
  "at" bigint NOT NULL,
  "duration_ms" bigint NOT NULL,
  "response_status" bigint,
  "error" text,
  "ok" boolean NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_webhook_attempts_webhook" ON "_webhook_attempts" ("webhook_id", "id");
--> statement-breakpoint
CREATE INDEX "_webhook_attempts_delivery" ON "_webhook_attempts" ("delivery_id");
