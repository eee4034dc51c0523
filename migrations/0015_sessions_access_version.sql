-- The number of 0012_users_access_version also grows when a session ends (revoked) or goes, so a server may keep the
-- session checks it read while the number stands: a revocation by any process (the CLI, another node) holds at the
-- next request.
CREATE TRIGGER `_sessions_access_changed` AFTER UPDATE OF `revoked_at`, `expires_at`, `user_id` ON `_sessions`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_sessions_deleted` AFTER DELETE ON `_sessions`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
