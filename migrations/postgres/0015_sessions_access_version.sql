-- The number of 0012_users_access_version also grows when a session ends or goes (see ../0015_sessions_access_version.sql).
CREATE TRIGGER "_sessions_access_changed" AFTER UPDATE OF "revoked_at", "expires_at", "user_id" OR DELETE ON "_sessions"
  FOR EACH STATEMENT EXECUTE FUNCTION "_users_access_changed"();
