-- Failed logins (passwords and 2FA codes), counted per normalised email whether or not an
-- account exists, so a lockout reveals nothing. The count moves here from `_users`.
CREATE TABLE `_login_attempts` (
  `email` text PRIMARY KEY NOT NULL,
  `attempts` integer NOT NULL,
  `last_at` integer NOT NULL,
  `locked_until` integer
);
--> statement-breakpoint
CREATE INDEX `_login_attempts_last_at` ON `_login_attempts` (`last_at`);
--> statement-breakpoint
INSERT INTO `_login_attempts` (`email`, `attempts`, `last_at`, `locked_until`)
  SELECT `email`, `failed_logins`, `updated_at`, `locked_until` FROM `_users` WHERE `failed_logins` > 0 OR `locked_until` IS NOT NULL;
--> statement-breakpoint
ALTER TABLE `_users` DROP COLUMN `failed_logins`;
--> statement-breakpoint
ALTER TABLE `_users` DROP COLUMN `locked_until`;
--> statement-breakpoint
-- Wrong admin credentials per client address (on /admin/login and every other route), one row a try.
CREATE TABLE `_admin_attempts` (
  `ip` text NOT NULL,
  `at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_admin_attempts_ip_at` ON `_admin_attempts` (`ip`, `at`);
