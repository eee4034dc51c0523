-- System tables. User collections are separate tables named after the collection.
CREATE TABLE IF NOT EXISTS `_meta` (
  `key` text PRIMARY KEY NOT NULL,
  `value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_collections` (
  `name` text PRIMARY KEY NOT NULL COLLATE NOCASE,
  `rules` text NOT NULL,
  `field_rules` text NOT NULL DEFAULT '[]',
  `fields` text NOT NULL DEFAULT '[]',
  `indexes` text NOT NULL DEFAULT '[]',
  `fts` text NOT NULL DEFAULT '{"enabled":false,"fields":[]}',
  `created_at` integer NOT NULL,
  `updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_settings` (
  `key` text PRIMARY KEY NOT NULL,
  `value` text NOT NULL,
  `updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_users` (
  `id` text PRIMARY KEY NOT NULL,
  `email` text NOT NULL UNIQUE,
  `password_hash` text,
  `is_verified` integer NOT NULL DEFAULT 0,
  `roles` text NOT NULL DEFAULT '[]',
  `metadata` text NOT NULL DEFAULT '{}',
  `totp_secret` text,
  `totp_enabled` integer NOT NULL DEFAULT 0,
  `totp_last_step` integer,
  `failed_logins` integer NOT NULL DEFAULT 0,
  `locked_until` integer,
  `created_at` integer NOT NULL,
  `updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_sessions` (
  `id` text PRIMARY KEY NOT NULL,
  `user_id` text NOT NULL REFERENCES `_users`(`id`) ON DELETE CASCADE,
  `created_at` integer NOT NULL,
  `last_used_at` integer NOT NULL,
  `expires_at` integer NOT NULL,
  `ip` text,
  `user_agent` text,
  `revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `_sessions_user` ON `_sessions` (`user_id`);
--> statement-breakpoint
CREATE TABLE `_refresh_tokens` (
  `hash` text PRIMARY KEY NOT NULL,
  `session_id` text NOT NULL REFERENCES `_sessions`(`id`) ON DELETE CASCADE,
  `created_at` integer NOT NULL,
  `expires_at` integer NOT NULL,
  `used_at` integer
);
--> statement-breakpoint
CREATE INDEX `_refresh_tokens_session` ON `_refresh_tokens` (`session_id`);
--> statement-breakpoint
CREATE TABLE `_api_keys` (
  `id` text PRIMARY KEY NOT NULL,
  `user_id` text NOT NULL REFERENCES `_users`(`id`) ON DELETE CASCADE,
  `name` text NOT NULL,
  `key_hash` text NOT NULL UNIQUE,
  `created_at` integer NOT NULL,
  `last_used_at` integer,
  `revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `_api_keys_user` ON `_api_keys` (`user_id`);
--> statement-breakpoint
CREATE TABLE `_tokens` (
  `hash` text PRIMARY KEY NOT NULL,
  `kind` text NOT NULL,
  `user_id` text NOT NULL REFERENCES `_users`(`id`) ON DELETE CASCADE,
  `created_at` integer NOT NULL,
  `expires_at` integer NOT NULL,
  `used_at` integer,
  `attempts` integer NOT NULL DEFAULT 0,
  `data` text
);
--> statement-breakpoint
CREATE INDEX `_tokens_user` ON `_tokens` (`user_id`, `kind`);
--> statement-breakpoint
CREATE TABLE `_recovery_codes` (
  `user_id` text NOT NULL REFERENCES `_users`(`id`) ON DELETE CASCADE,
  `code_hash` text NOT NULL,
  `used_at` integer,
  PRIMARY KEY (`user_id`, `code_hash`)
);
--> statement-breakpoint
CREATE TABLE `_mail_log` (
  `email` text NOT NULL,
  `sent_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_mail_log_email` ON `_mail_log` (`email`, `sent_at`);
--> statement-breakpoint
CREATE TABLE `_relations` (
  `id` text PRIMARY KEY NOT NULL,
  `from_col` text NOT NULL COLLATE NOCASE,
  `from_field` text NOT NULL,
  `to_col` text NOT NULL COLLATE NOCASE,
  `to_field` text,
  `type` text NOT NULL,
  `on_delete` text NOT NULL DEFAULT 'restrict',
  `created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `_oauth_accounts` (
  `provider` text NOT NULL,
  `provider_user_id` text NOT NULL,
  `user_id` text NOT NULL REFERENCES `_users`(`id`) ON DELETE CASCADE,
  `email` text,
  `name` text,
  `avatar_url` text,
  `created_at` integer NOT NULL,
  PRIMARY KEY (`provider`, `provider_user_id`)
);
--> statement-breakpoint
CREATE TABLE `_oauth_states` (
  `state_hash` text PRIMARY KEY NOT NULL,
  `provider` text NOT NULL,
  `code_verifier` text NOT NULL,
  `nonce` text,
  `cookie_hash` text NOT NULL,
  `created_at` integer NOT NULL,
  `expires_at` integer NOT NULL
);
