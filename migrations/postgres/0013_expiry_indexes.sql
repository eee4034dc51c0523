-- Indexes on the times expired rows are deleted by (see ../0013_expiry_indexes.sql).
CREATE INDEX "_mail_log_sent_at" ON "_mail_log" ("sent_at");
--> statement-breakpoint
CREATE INDEX "_oauth_states_expires_at" ON "_oauth_states" ("expires_at");
--> statement-breakpoint
CREATE INDEX "_refresh_tokens_session_used" ON "_refresh_tokens" ("session_id", "used_at");
