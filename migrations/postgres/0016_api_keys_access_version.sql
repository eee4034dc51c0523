-- The number of 0012_users_access_version also grows when an API key ends or goes (see ../0016_api_keys_access_version.sql).
CREATE TRIGGER "_api_keys_access_changed" AFTER UPDATE OF "revoked_at", "user_id", "key_hash" OR DELETE ON "_api_keys"
  FOR EACH STATEMENT EXECUTE FUNCTION "_users_access_changed"();
