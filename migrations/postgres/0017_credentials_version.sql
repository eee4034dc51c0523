-- Sessions' and API keys' ends move `credentials_version` instead of the users' access version (see
-- ../0017_credentials_version.sql).
CREATE FUNCTION "_credentials_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "_meta" ("key", "value") VALUES ('credentials_version', '1')
    ON CONFLICT ("key") DO UPDATE SET "value" = CAST(CAST("_meta"."value" AS bigint) + 1 AS text);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER "_sessions_access_changed" ON "_sessions";
--> statement-breakpoint
DROP TRIGGER "_api_keys_access_changed" ON "_api_keys";
--> statement-breakpoint
CREATE TRIGGER "_sessions_ended" AFTER UPDATE OF "revoked_at", "expires_at", "user_id" OR DELETE ON "_sessions"
  FOR EACH STATEMENT EXECUTE FUNCTION "_credentials_changed"();
--> statement-breakpoint
CREATE TRIGGER "_api_keys_ended" AFTER UPDATE OF "revoked_at", "user_id", "key_hash" OR DELETE ON "_api_keys"
  FOR EACH STATEMENT EXECUTE FUNCTION "_credentials_changed"();
