-- Expired rows are deleted by time at each use of these tables (the mail limit at each magic link or reset, OAuth
-- states at each sign-in start): without an index on the time, each delete read the whole table while it held the
-- write lock, and a client sending to many addresses grew the table it read.
CREATE INDEX `_mail_log_sent_at` ON `_mail_log` (`sent_at`);
--> statement-breakpoint
CREATE INDEX `_oauth_states_expires_at` ON `_oauth_states` (`expires_at`);
--> statement-breakpoint
CREATE INDEX `_refresh_tokens_session_used` ON `_refresh_tokens` (`session_id`, `used_at`);
