-- Sessions' and API keys' ends move a number of their own (`_meta` key `credentials_version`) instead of the users'
-- access version of 0012: realtime delivery reads that one to keep the users' roles it read, and a sign-out
-- anywhere made it read them all again. A server keeps a credential's check while both numbers stand.
DROP TRIGGER `_sessions_access_changed`;
--> statement-breakpoint
DROP TRIGGER `_sessions_deleted`;
--> statement-breakpoint
DROP TRIGGER `_api_keys_access_changed`;
--> statement-breakpoint
DROP TRIGGER `_api_keys_deleted`;
--> statement-breakpoint
CREATE TRIGGER `_sessions_ended` AFTER UPDATE OF `revoked_at`, `expires_at`, `user_id` ON `_sessions`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('credentials_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_sessions_deleted` AFTER DELETE ON `_sessions`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('credentials_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_api_keys_ended` AFTER UPDATE OF `revoked_at`, `user_id`, `key_hash` ON `_api_keys`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('credentials_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_api_keys_deleted` AFTER DELETE ON `_api_keys`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('credentials_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
