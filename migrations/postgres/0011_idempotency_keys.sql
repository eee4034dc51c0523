-- Answers kept for `Idempotency-Key` (see ../0011_idempotency_keys.sql).
CREATE TABLE "_idempotency_keys" (
  "id" text PRIMARY KEY NOT NULL,
  "fingerprint" text NOT NULL,
  "status" bigint NOT NULL,
  "body" text,
  "created_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_idempotency_keys_expires_at" ON "_idempotency_keys" ("expires_at");
