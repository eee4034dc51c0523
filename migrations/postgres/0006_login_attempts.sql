-- Failed logins per normalised email, and wrong admin credentials per address (see ../0006_login_attempts.sql).
CREATE TABLE "_login_attempts" (
  "email" text PRIMARY KEY NOT NULL,
  "attempts" bigint NOT NULL,
  "last_at" bigint NOT NULL,
  "locked_until" bigint
);
--> statement-breakpoint
CREATE INDEX "_login_attempts_last_at" ON "_login_attempts" ("last_at");
--> statement-breakpoint
INSERT INTO "_login_attempts" ("email", "attempts", "last_at", "locked_until")
  SELECT "email", "failed_logins", "updated_at", "locked_until" FROM "_users" WHERE "failed_logins" > 0 OR "locked_until" IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "_users" DROP COLUMN "failed_logins";
--> statement-breakpoint
ALTER TABLE "_users" DROP COLUMN "locked_until";
--> statement-breakpoint
CREATE TABLE "_admin_attempts" (
  "ip" text NOT NULL,
  "at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_admin_attempts_ip_at" ON "_admin_attempts" ("ip", "at");
