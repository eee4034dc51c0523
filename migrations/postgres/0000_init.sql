-- System tables on PostgreSQL, the same tables and columns as ../0000_init.sql.
-- Types: SQLite's integer is bigint (times in ms, counters) or boolean; JSON stays text, as on SQLite.
-- `COLLATE NOCASE` is the case-insensitive ICU collation below (equality and unique keys ignore case).
CREATE COLLATION IF NOT EXISTS baas_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "_meta" (
  "key" text PRIMARY KEY NOT NULL,
  "value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_collections" (
  "name" text COLLATE baas_nocase PRIMARY KEY NOT NULL,
  "rules" text NOT NULL,
  "field_rules" text NOT NULL DEFAULT '[]',
  "fields" text NOT NULL DEFAULT '[]',
  "indexes" text NOT NULL DEFAULT '[]',
  "fts" text NOT NULL DEFAULT '{"enabled":false,"fields":[]}',
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_settings" (
  "key" text PRIMARY KEY NOT NULL,
  "value" text NOT NULL,
  "updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_users" (
  "rowid" bigint GENERATED ALWAYS AS IDENTITY,
  "id" text PRIMARY KEY NOT NULL,
  "email" text NOT NULL UNIQUE,
  "password_hash" text,
  "is_verified" boolean NOT NULL DEFAULT false,
  "roles" text NOT NULL DEFAULT '[]',
  "metadata" text NOT NULL DEFAULT '{}',
  "totp_secret" text,
  "totp_enabled" boolean NOT NULL DEFAULT false,
  "totp_last_step" bigint,
  "failed_logins" bigint NOT NULL DEFAULT 0,
  "locked_until" bigint,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_sessions" (
  "id" text PRIMARY KEY NOT NULL,
  "user_id" text NOT NULL REFERENCES "_users"("id") ON DELETE CASCADE,
  "created_at" bigint NOT NULL,
  "last_used_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL,
  "ip" text,
  "user_agent" text,
  "revoked_at" bigint
);
--> statement-breakpoint
CREATE INDEX "_sessions_user" ON "_sessions" ("user_id");
--> statement-breakpoint
CREATE TABLE "_refresh_tokens" (
  "hash" text PRIMARY KEY NOT NULL,
  "session_id" text NOT NULL REFERENCES "_sessions"("id") ON DELETE CASCADE,
  "created_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL,
  "used_at" bigint
);
--> statement-breakpoint
CREATE INDEX "_refresh_tokens_session" ON "_refresh_tokens" ("session_id");
--> statement-breakpoint
CREATE TABLE "_api_keys" (
  "rowid" bigint GENERATED ALWAYS AS IDENTITY,
  "id" text PRIMARY KEY NOT NULL,
  "user_id" text NOT NULL REFERENCES "_users"("id") ON DELETE CASCADE,
  "name" text NOT NULL,
  "key_hash" text NOT NULL UNIQUE,
  "created_at" bigint NOT NULL,
  "last_used_at" bigint,
  "revoked_at" bigint
);
--> statement-breakpoint
CREATE INDEX "_api_keys_user" ON "_api_keys" ("user_id");
--> statement-breakpoint
CREATE TABLE "_tokens" (
  "hash" text PRIMARY KEY NOT NULL,
  "kind" text NOT NULL,
  "user_id" text NOT NULL REFERENCES "_users"("id") ON DELETE CASCADE,
  "created_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL,
  "used_at" bigint,
  "attempts" bigint NOT NULL DEFAULT 0,
  "data" text
);
--> statement-breakpoint
CREATE INDEX "_tokens_user" ON "_tokens" ("user_id", "kind");
--> statement-breakpoint
CREATE TABLE "_recovery_codes" (
  "user_id" text NOT NULL REFERENCES "_users"("id") ON DELETE CASCADE,
  "code_hash" text NOT NULL,
  "used_at" bigint,
  PRIMARY KEY ("user_id", "code_hash")
);
--> statement-breakpoint
CREATE TABLE "_mail_log" (
  "email" text NOT NULL,
  "sent_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_mail_log_email" ON "_mail_log" ("email", "sent_at");
--> statement-breakpoint
CREATE TABLE "_relations" (
  "id" text PRIMARY KEY NOT NULL,
  "from_col" text COLLATE baas_nocase NOT NULL,
  "from_field" text NOT NULL,
  "to_col" text COLLATE baas_nocase NOT NULL,
  "to_field" text,
  "type" text NOT NULL,
  "on_delete" text NOT NULL DEFAULT 'restrict',
  "created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "_oauth_accounts" (
  "provider" text NOT NULL,
  "provider_user_id" text NOT NULL,
  "user_id" text NOT NULL REFERENCES "_users"("id") ON DELETE CASCADE,
  "email" text,
  "name" text,
  "avatar_url" text,
  "created_at" bigint NOT NULL,
  PRIMARY KEY ("provider", "provider_user_id")
);
--> statement-breakpoint
CREATE TABLE "_oauth_states" (
  "state_hash" text PRIMARY KEY NOT NULL,
  "provider" text NOT NULL,
  "code_verifier" text NOT NULL,
  "nonce" text,
  "cookie_hash" text NOT NULL,
  "created_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL
);
