-- The number of 0012_users_access_version also grows when an API key ends (revoked) or goes, as 0015 has it for
-- sessions: a server keeps an API key's check while the number stands.
CREATE TRIGGER `_api_keys_access_changed` AFTER UPDATE OF `revoked_at`, `user_id`, `key_hash` ON `_api_keys`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_api_keys_deleted` AFTER DELETE ON `_api_keys`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
