// The PostgreSQL migrations of the system tables, imported as text so the compiled binary carries them.
// Same names as ../index.ts, one for one: both engines record the same names in `_migrations`.
import init from "./0000_init.sql" with { type: "text" };
import relations from "./0005_relations.sql" with { type: "text" };
import loginAttempts from "./0006_login_attempts.sql" with { type: "text" };
import realtimeStreams from "./0007_realtime_streams.sql" with { type: "text" };
import realtimePayloads from "./0008_realtime_payloads.sql" with { type: "text" };
import webhooks from "./0009_webhooks.sql" with { type: "text" };
import realtimeSequence from "./0010_realtime_sequence.sql" with { type: "text" };
import idempotencyKeys from "./0011_idempotency_keys.sql" with { type: "text" };
import usersAccessVersion from "./0012_users_access_version.sql" with { type: "text" };
import expiryIndexes from "./0013_expiry_indexes.sql" with { type: "text" };
import ftsWords from "./0014_fts_words.sql" with { type: "text" };
import sessionsAccessVersion from "./0015_sessions_access_version.sql" with { type: "text" };
import apiKeysAccessVersion from "./0016_api_keys_access_version.sql" with { type: "text" };
import credentialsVersion from "./0017_credentials_version.sql" with { type: "text" };

/** Migrations in the order they apply. */
export const postgresMigrations: { name: string; sql: string }[] = [
  { name: "0000_init", sql: init },
  { name: "0005_relations", sql: relations },
  { name: "0006_login_attempts", sql: loginAttempts },
  { name: "0007_realtime_streams", sql: realtimeStreams },
  { name: "0008_realtime_payloads", sql: realtimePayloads },
  { name: "0009_webhooks", sql: webhooks },
  { name: "0010_realtime_sequence", sql: realtimeSequence },
  { name: "0011_idempotency_keys", sql: idempotencyKeys },
  { name: "0012_users_access_version", sql: usersAccessVersion },
  { name: "0013_expiry_indexes", sql: expiryIndexes },
  { name: "0014_fts_words", sql: ftsWords },
  { name: "0015_sessions_access_version", sql: sessionsAccessVersion },
  { name: "0016_api_keys_access_version", sql: apiKeysAccessVersion },
  { name: "0017_credentials_version", sql: credentialsVersion },
];
