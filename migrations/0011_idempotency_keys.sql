-- Answers kept for `Idempotency-Key` (a client's retry of a POST gets the first answer again instead of a second
-- record). `id` is a hash of the caller and the key (the key itself is not kept); `fingerprint` a hash of the
-- request (method, path, body), so the same key with another request is refused; `status` 0 while the request
-- runs (a call that is not one transaction keeps its claim here until `expires_at`), else the answer's status,
-- whose `body` is encrypted under the key. Rows past `expires_at` are dropped.
CREATE TABLE `_idempotency_keys` (
  `id` text PRIMARY KEY NOT NULL,
  `fingerprint` text NOT NULL,
  `status` integer NOT NULL,
  `body` text,
  `created_at` integer NOT NULL,
  `expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_idempotency_keys_expires_at` ON `_idempotency_keys` (`expires_at`);
