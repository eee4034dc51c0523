-- Webhooks (CONTRACT §15): each committed change event that a webhook subscribes to is written to the outbox
-- (`_webhook_deliveries`) in the transaction of the change, then POSTed by the server's delivery worker. A
-- delivery is `pending` until it is answered 2xx (`delivered`) or its 24 hours run out (`failed`). A worker
-- claims a due delivery by moving `next_at` past the attempt's timeout under a `claim` token of its own: one that
-- dies while it delivers leaves the row due again once that time has passed. `_webhook_attempts` keeps each
-- attempt (the last 100 per webhook; finished deliveries go with their last listed attempt).
CREATE TABLE `_webhooks` (
  `id` text PRIMARY KEY NOT NULL,
  `url` text NOT NULL,
  `collections` text NOT NULL,
  `actions` text NOT NULL,
  `secret` text NOT NULL,
  `enabled` integer DEFAULT true NOT NULL,
  `created_at` integer NOT NULL,
  `updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_webhook_deliveries` (
  `id` text PRIMARY KEY NOT NULL,
  `webhook_id` text NOT NULL REFERENCES `_webhooks`(`id`) ON DELETE CASCADE,
  `event_id` text NOT NULL,
  `collection` text NOT NULL,
  `action` text NOT NULL,
  `record_id` text NOT NULL,
  `body` text NOT NULL,
  `status` text NOT NULL,
  `attempts` integer DEFAULT 0 NOT NULL,
  `next_at` integer NOT NULL,
  `claim` text,
  `expires_at` integer NOT NULL,
  `created_at` integer NOT NULL,
  `updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_webhook_deliveries_due` ON `_webhook_deliveries` (`webhook_id`, `next_at`) WHERE `status` = 'pending';
--> statement-breakpoint
-- Finished deliveries, for pruning: a row enters it when it is delivered or failed, not when the change writes it.
CREATE INDEX `_webhook_deliveries_done` ON `_webhook_deliveries` (`webhook_id`) WHERE `status` <> 'pending';
--> statement-breakpoint
CREATE TABLE `_webhook_attempts` (
  `id` text PRIMARY KEY NOT NULL,
  `delivery_id` text NOT NULL REFERENCES `_webhook_deliveries`(`id`) ON DELETE CASCADE,
  `webhook_id` text NOT NULL,
  `attempt` integer NOT NULL,
  `at` integer NOT NULL,
  `duration_ms` integer NOT NULL,
  `response_status` integer,
  `error` text,
  `ok` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_webhook_attempts_webhook` ON `_webhook_attempts` (`webhook_id`, `id`);
--> statement-breakpoint
CREATE INDEX `_webhook_attempts_delivery` ON `_webhook_attempts` (`delivery_id`);
