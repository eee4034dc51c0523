import { sqliteTable, text, integer, primaryKey } from "drizzle-orm/sqlite-core";

// Drizzle schema of the system tables; migrations/0000_init.sql creates them.

export const meta = sqliteTable("_meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const collections = sqliteTable("_collections", {
  name: text("name").primaryKey(),
  rules: text("rules").notNull(),
  fieldRules: text("field_rules").notNull(),
  fields: text("fields").notNull(),
  indexes: text("indexes").notNull(),
  fts: text("fts").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const settings = sqliteTable("_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const users = sqliteTable("_users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash"),
  isVerified: integer("is_verified", { mode: "boolean" }).notNull().default(false),
  roles: text("roles").notNull().default("[]"),
  metadata: text("metadata").notNull().default("{}"),
  totpSecret: text("totp_secret"),
  totpEnabled: integer("totp_enabled", { mode: "boolean" }).notNull().default(false),
  totpLastStep: integer("totp_last_step"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const sessions = sqliteTable("_sessions", {
  id: text("id").primaryKey(),
  userId: text("user_id").notNull(),
  createdAt: integer("created_at").notNull(),
  lastUsedAt: integer("last_used_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
  ip: text("ip"),
  userAgent: text("user_agent"),
  revokedAt: integer("revoked_at"),
});

export const refreshTokens = sqliteTable("_refresh_tokens", {
  hash: text("hash").primaryKey(),
  sessionId: text("session_id").notNull(),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
});

export const apiKeys = sqliteTable("_api_keys", {
  id: text("id").primaryKey(),
  userId: text("user_id").notNull(),
  name: text("name").notNull(),
  keyHash: text("key_hash").notNull().unique(),
  createdAt: integer("created_at").notNull(),
  lastUsedAt: integer("last_used_at"),
  revokedAt: integer("revoked_at"),
});

export const tokens = sqliteTable("_tokens", {
  hash: text("hash").primaryKey(),
  kind: text("kind").notNull(),
  userId: text("user_id").notNull(),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
  attempts: integer("attempts").notNull().default(0),
  data: text("data"),
});

export const recoveryCodes = sqliteTable(
  "_recovery_codes",
  {
    userId: text("user_id").notNull(),
    codeHash: text("code_hash").notNull(),
    usedAt: integer("used_at"),
  },
  (t) => [primaryKey({ columns: [t.userId, t.codeHash] })],
);

export const mailLog = sqliteTable("_mail_log", {
  email: text("email").notNull(),
  sentAt: integer("sent_at").notNull(),
});

/** Failed logins per normalised email, whether or not an account exists (see auth/lockout.ts). */
export const loginAttempts = sqliteTable("_login_attempts", {
  email: text("email").primaryKey(),
  attempts: integer("attempts").notNull(),
  lastAt: integer("last_at").notNull(),
  lockedUntil: integer("locked_until"),
});

/** Wrong admin credentials, one row per try, per client address (see auth/admin-limit.ts). */
export const adminAttempts = sqliteTable("_admin_attempts", {
  ip: text("ip").notNull(),
  at: integer("at").notNull(),
});

/** Open realtime streams of the nodes sharing a PostgreSQL database, for the per-address limits (see realtime/shared-limits.ts). */
export const realtimeStreams = sqliteTable("_realtime_streams", {
  id: text("id").primaryKey(),
  node: text("node").notNull(),
  ip: text("ip").notNull(),
  topics: integer("topics").notNull(),
  seenAt: integer("seen_at").notNull(),
});

/** Records of change events too large for a notice between nodes on PostgreSQL (see realtime/relay.ts). */
export const realtimePayloads = sqliteTable("_realtime_payloads", {
  id: text("id").primaryKey(),
  record: text("record").notNull(),
  at: integer("at").notNull(),
});

/** Webhooks (CONTRACT §15); `collections` and `actions` are JSON arrays (see webhooks/store.ts). */
export const webhooks = sqliteTable("_webhooks", {
  id: text("id").primaryKey(),
  url: text("url").notNull(),
  collections: text("collections").notNull(),
  actions: text("actions").notNull(),
  secret: text("secret").notNull(),
  enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** The webhook outbox: one row per change event and webhook, written in the change's transaction (see webhooks/outbox.ts). */
export const webhookDeliveries = sqliteTable("_webhook_deliveries", {
  id: text("id").primaryKey(),
  webhookId: text("webhook_id").notNull(),
  eventId: text("event_id").notNull(),
  collection: text("collection").notNull(),
  action: text("action").notNull(),
  recordId: text("record_id").notNull(),
  body: text("body").notNull(),
  status: text("status").notNull(),
  attempts: integer("attempts").notNull().default(0),
  nextAt: integer("next_at").notNull(),
  claim: text("claim"),
  expiresAt: integer("expires_at").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** Each attempt to deliver, the last 100 per webhook (see webhooks/worker.ts). */
export const webhookAttempts = sqliteTable("_webhook_attempts", {
  id: text("id").primaryKey(),
  deliveryId: text("delivery_id").notNull(),
  webhookId: text("webhook_id").notNull(),
  attempt: integer("attempt").notNull(),
  at: integer("at").notNull(),
  durationMs: integer("duration_ms").notNull(),
  responseStatus: integer("response_status"),
  error: text("error"),
  ok: integer("ok", { mode: "boolean" }).notNull(),
});

/** The order of change events across nodes on PostgreSQL: one row (see realtime/relay.ts). */
export const realtimeSequence = sqliteTable("_realtime_sequence", {
  id: integer("id").primaryKey(),
  epoch: text("epoch").notNull(),
  n: integer("n").notNull(),
});

/** Answers kept for `Idempotency-Key`, by a hash of caller and key (see idempotency/store.ts). */
export const idempotencyKeys = sqliteTable("_idempotency_keys", {
  id: text("id").primaryKey(),
  fingerprint: text("fingerprint").notNull(),
  status: integer("status").notNull(),
  body: text("body"),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

export const relations = sqliteTable("_relations", {
  id: text("id").primaryKey(),
  fromCol: text("from_col").notNull(),
  fromField: text("from_field").notNull(),
  toCol: text("to_col").notNull(),
  toField: text("to_field"),
  type: text("type").notNull(),
  onDelete: text("on_delete").notNull().default("restrict"),
  createdAt: integer("created_at").notNull(),
});

export const relationCascades = sqliteTable(
  "_relation_cascades",
  {
    causeCol: text("cause_col").notNull(),
    causeId: text("cause_id").notNull(),
    relationId: text("relation_id").notNull(),
    kind: text("kind").notNull(),
    recCol: text("rec_col").notNull(),
    recId: text("rec_id").notNull(),
    pos: integer("pos").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.causeCol, t.causeId, t.relationId, t.kind, t.recId] })],
);

export const oauthAccounts = sqliteTable(
  "_oauth_accounts",
  {
    provider: text("provider").notNull(),
    providerUserId: text("provider_user_id").notNull(),
    userId: text("user_id").notNull(),
    email: text("email"),
    name: text("name"),
    avatarUrl: text("avatar_url"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.providerUserId] })],
);

export const oauthStates = sqliteTable("_oauth_states", {
  stateHash: text("state_hash").primaryKey(),
  provider: text("provider").notNull(),
  codeVerifier: text("code_verifier").notNull(),
  nonce: text("nonce"),
  cookieHash: text("cookie_hash").notNull(),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
});
