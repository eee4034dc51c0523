-- A number that grows whenever a user's roles, metadata, address or verification change or a user is deleted
-- (`_meta` key `users_access_version`, absent until the first change). Realtime delivery keeps the users' access
-- it read while the number stands, so a change made by any process (the CLI, another node) holds at the next event.
CREATE TRIGGER `_users_access_changed` AFTER UPDATE OF `roles`, `metadata`, `email`, `is_verified` ON `_users`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
--> statement-breakpoint
CREATE TRIGGER `_users_deleted` AFTER DELETE ON `_users`
BEGIN
  INSERT INTO `_meta` (`key`, `value`) VALUES ('users_access_version', '1')
    ON CONFLICT (`key`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
