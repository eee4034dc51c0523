-- A number that grows whenever a user's access changes or a user is deleted (see ../0012_users_access_version.sql).
CREATE FUNCTION "_users_access_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "_meta" ("key", "value") VALUES ('users_access_version', '1')
    ON CONFLICT ("key") DO UPDATE SET "value" = CAST(CAST("_meta"."value" AS bigint) + 1 AS text);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "_users_access_changed" AFTER UPDATE OF "roles", "metadata", "email", "is_verified" OR DELETE ON "_users"
  FOR EACH STATEMENT EXECUTE FUNCTION "_users_access_changed"();
