import { Type } from "@sinclair/typebox";
import { t, type TSchema } from "elysia";
import { DECLARABLE_TYPES } from "../catalog/field-types.ts";
import { MAX_INDEX_FIELDS } from "../collections/indexes.ts";
import { MAX_BATCH } from "../records/batch.ts";
import { MAX_BULK } from "../records/bulk.ts";
import { ON_DELETE, RELATION_TYPES } from "../catalog/types.ts";
import { OAUTH_REDIRECT_URLS, SETTING_DEFS } from "../settings/settings.ts";
import { MAX_WEBHOOK_COLLECTIONS, WEBHOOK_ACTIONS } from "../webhooks/rows.ts";
import { byService } from "./check.ts";

/**
 * TypeBox schemas of the HTTP API's bodies, query strings and answers: the one source of the routes'
 * documentation (`doc()`, `GET /api/v1/openapi.json`) and of the body checks (`check.ts`). A body's
 * shape (an object, a field's JSON type, a key not allowed) is checked against its schema; what a
 * field means (an email is 422, a wrong token 401) stays with the service that reads it, and a field
 * it judges whatever its type is marked `byService`. The service raises a rejection after what it
 * checks first (credentials, setting, collection), so no status changes.
 */

/** An open object: the listed fields, and any other. */
const open = <P extends Record<string, TSchema>>(props: P, description?: string) =>
  t.Object(props, { additionalProperties: true, ...(description ? { description } : {}) });
const nullable = <T extends TSchema>(s: T) => t.Union([s, t.Null()]);
const millis = (description: string) => t.Number({ description: `${description} (Unix milliseconds)` });

// ---- Errors (CONTRACT §1)

export const ErrorBody = open(
  { error: t.String({ description: "a human message" }), code: t.String({ description: "snake_case error code" }) },
  "Every error but 422. Some carry more keys (`index` and `op` of a batch, `retry_after`…).",
);
export const ValidationBody = open(
  {
    errors: t.Array(
      open({ field: t.String(), rule: t.String(), message: t.String(), index: t.Optional(Type.Integer()) }),
    ),
    index: t.Optional(Type.Integer({ description: "the failing element of a bulk insert" })),
  },
  "422: the field checks that failed.",
);

// ---- Records

export const RecordBody = open(
  {
    _id: t.String(),
    _created_at: millis("creation time"),
    _updated_at: millis("last update"),
    _owner_id: nullable(t.String()),
    _deleted_at: nullable(t.Number()),
  },
  "A record: the system fields and every field of the collection (`null` when never set); `_expand` with `expand`.",
);
/** With `fields=`, a record holds `_id` and the fields asked for (and `_expand` with `expand`): nothing else is sure to be there. */
export const RecordProjection = open(
  {
    _id: t.String(),
    _created_at: t.Optional(RecordBody.properties._created_at),
    _updated_at: t.Optional(RecordBody.properties._updated_at),
    _owner_id: t.Optional(RecordBody.properties._owner_id),
    _deleted_at: t.Optional(RecordBody.properties._deleted_at),
  },
  "A record read with `fields=`: `_id` and the fields asked for; `_expand` with `expand`.",
);
/** What a list or a read answers: a whole record, or with `fields=` its projection. */
export const RecordRead = t.Union([RecordBody, RecordProjection]);
export const RecordData = open({}, "The record's fields (free-form; system fields are ignored).");
export const RecordList = t.Object({
  items: t.Array(RecordRead),
  total: nullable(Type.Integer({ description: "every match in offset mode; null in cursor mode or with total=false" })),
  next_cursor: nullable(t.String({ description: "the last item's _id when more records follow" })),
});
export const CountBody = t.Object({ total: Type.Integer() });
/** A value as JSON holds it: what min and max give for a field of any type, and what a group is named by. */
const anyValue = (description: string) =>
  t.Union([t.Number(), t.String(), t.Boolean(), t.Null(), t.Object({}, { additionalProperties: true }), t.Array(t.Unknown())], { description });
const aggregateValue = anyValue("sum, avg, count: a number (sum and count of nothing 0, avg null); min, max: a value of the field's type, null when nothing matches");
export const AggregateBody = t.Union([
  t.Object({ value: aggregateValue }),
  t.Object({ groups: t.Array(t.Object({ group: anyValue("a value of the group_by field"), value: aggregateValue })) }),
]);
export const BulkBody = t.Array(RecordData, { minItems: 1, maxItems: MAX_BULK });
export const BatchOperation = t.Object(
  {
    op: t.Union([t.Literal("create"), t.Literal("update"), t.Literal("delete")]),
    // Checked by the batch for the operations that use them (a create ignores id, a delete data).
    id: t.Optional(byService(t.String({ description: "update and delete: the record's _id" }))),
    data: t.Optional(byService(t.Object({}, { additionalProperties: true, description: "create and update: the record's fields" }))),
  },
  { additionalProperties: false },
);
/** The operations are checked one by one as they run (a malformed one fails the batch with its index). */
export const BatchBody = t.Object({ operations: t.Array(byService(BatchOperation), { minItems: 1, maxItems: MAX_BATCH }) });
export const BatchResult = t.Object({
  results: t.Array(
    t.Union([
      t.Object({ op: t.Literal("create"), record: RecordBody }),
      t.Object({ op: t.Literal("update"), record: RecordBody }),
      t.Object({ op: t.Literal("delete"), id: t.String() }),
    ]),
    { description: "one per operation, in order" },
  ),
});

// TypeBox's own integers: Elysia's `t.Integer` also takes a string (and compiles a checker when it is declared).
const many = (description: string) => t.Optional(t.Union([t.String(), t.Array(t.String())], { description }));
const matchQuery = {
  filter: many("`field:op:value`, repeatable; also `filter[field]=value` and `filter[field][op]=value`"),
  search: t.Optional(t.String({ description: "full-text query (needs the collection's full-text index)" })),
  include_deleted: t.Optional(t.Boolean({ description: "true, false, 1 or 0" })),
};
export const ListQuery = t.Object({
  ...matchQuery,
  sort: many("`field`, `-field`, `field:asc`, `field:desc`; repeatable or comma-separated"),
  limit: t.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  page: t.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1 })),
  after: t.Optional(t.String({ description: "cursor mode: the previous page's next_cursor" })),
  cursor: t.Optional(t.String({ description: "same as after" })),
  total: t.Optional(t.Boolean({ description: "false (or 0) skips the count in offset mode" })),
  fields: t.Optional(t.String({ description: "comma-separated fields to return (plus _id)" })),
  expand: many("relation fields to embed under _expand"),
});
export const GetQuery = t.Object({ include_deleted: ListQuery.properties.include_deleted, fields: ListQuery.properties.fields, expand: ListQuery.properties.expand });
export const MatchQuery = t.Object(matchQuery);
export const AggregateQuery = t.Object({
  ...matchQuery,
  fn: t.Union([t.Literal("sum"), t.Literal("avg"), t.Literal("min"), t.Literal("max"), t.Literal("count")]),
  field: t.Optional(t.String()),
  group_by: t.Optional(t.String()),
});

// ---- Auth

export const UserBody = t.Object({
  id: t.String(),
  email: t.String(),
  is_verified: t.Boolean(),
  roles: t.Array(t.String()),
  metadata: open({}),
  created_at: millis("registration time"),
});
export const SessionBody = t.Object({
  access_token: t.String(),
  refresh_token: t.String(),
  expires_in: Type.Integer({ description: "seconds" }),
  token_type: t.Literal("Bearer"),
  user: UserBody,
});
export const TotpRequiredBody = t.Object({ totp_required: t.Literal(true), totp_token: t.String() });
export const LoginResultBody = t.Union([SessionBody, TotpRequiredBody]);
// A wrong email or password is 422 (register) or 401 (login), a wrong token 400 or 401: the services judge them.
const email = byService(t.String());
const password = byService(t.String());
const token = byService(t.String());
export const Credentials = open({ email, password });
export const RegisterBody = open({ email, password });
export const RefreshBody = open({ refresh_token: token });
export const TokenBody = open({ token });
export const EmailBody = open({ email });
export const ResetPasswordBody = open({ token, password });
export const MetadataBody = t.Object({ metadata: open({}) }, { additionalProperties: false });
export const CodeBody = open({ code: byService(t.Union([t.String(), Type.Integer()], { description: "the 6-digit TOTP code" })) });
export const TotpVerifyBody = open({ totp_token: token, code: CodeBody.properties.code });
export const NameBody = open({ name: t.String({ description: "1..100 characters" }) });
export const Ok = open({ ok: t.Literal(true) });
export const DeleteAccountBody = open({
  password: t.Optional(byService(t.String({ description: "the account's password" }))),
  code: t.Optional(CodeBody.properties.code),
}, "the password, or a fresh 2FA code (TOTP or recovery code) when 2FA is on; neither for an account without both, from a session at most 5 minutes old");
export const DeletedAccountBody = t.Object({
  ok: t.Literal(true),
  deleted: t.Record(t.String(), Type.Integer(), { description: "owned records deleted, by collection" }),
});
export const OwnDataBody = t.Object({
  user: UserBody,
  collections: t.Record(t.String(), t.Array(open({})), { description: "every active record the user owns, by collection" }),
});
export const TotpEnabledBody = t.Object({
  enabled: t.Literal(true),
  recovery_codes: t.Array(t.String(), { description: "single-use codes for a lost authenticator, shown only here" }),
});
export const TotpDisabledBody = t.Object({ enabled: t.Literal(false) });
export const ApiKeyBody = open({ id: t.String(), name: t.String(), created_at: t.Number(), last_used_at: t.Optional(nullable(t.Number())) });
export const Items = (item: TSchema = open({})) => open({ items: t.Array(item) });
const LinkedAccount = open({ provider: t.String(), email: nullable(t.String()), name: nullable(t.String()), avatar_url: nullable(t.String()), created_at: t.Number() });
export const LinkedAccounts = t.Object({ accounts: t.Array(LinkedAccount) });

// ---- Admin

export const SecretBody = open({ secret: byService(t.String()) });
export const AdminTokenBody = t.Object({ token: t.String(), expires_in: Type.Integer({ description: "seconds" }) });
// Rules are checked by the service (the CLI passes them too), with their own messages.
const rules = t.Optional(byService(open({}, "read, create, update, delete: public | authenticated | owner | disabled | { role } | an expression")));
const fieldRules = t.Optional(byService(t.Array(open({}))));
export const RulesBody = t.Object(
  { rules, field_rules: fieldRules, name: t.Optional(byService(t.String({ description: "the collection's own name (a collection cannot be renamed)" }))) },
  { additionalProperties: false, description: "At least one of rules and field_rules." },
);
export const RuleCheckBody = t.Object(
  {
    op: byService(t.String({ description: "read, create, update or delete" })),
    rule: byService(t.Unknown({ description: "a rule value: a fixed word, { role }, or an expression" })),
  },
  { additionalProperties: false, description: "A rule to check for one operation of the collection, without setting it." },
);
const fieldType = t.Union(DECLARABLE_TYPES.map((v) => t.Literal(v)));
/** A declared field (CONTRACT §13); a type with options takes them beside name and type. */
export const FieldDeclBody = open({ name: t.String(), type: fieldType }, "A field: its name and type (text, number, boolean, json).");
// The declarations are checked by the service, which names the failing element.
export const CollectionCreateBody = open({ name: t.String(), rules, field_rules: fieldRules, fields: t.Optional(byService(t.Array(FieldDeclBody))) });
export const FieldPatchBody = t.Object(
  { name: t.Optional(byService(t.String({ description: "the new name" }))), type: t.Optional(byService(fieldType)) },
  { additionalProperties: false, description: "At least one of name and type. A new type converts every stored value, or nothing changes (409 with `count`)." },
);
export const CollectionBody = open({
  name: t.String(),
  rules: open({}),
  field_rules: t.Array(open({})),
  fields: t.Array(open({ name: t.String(), type: t.String() })),
  indexes: t.Array(open({ name: t.String(), fields: t.Array(t.String()), unique: t.Boolean() })),
  fts: open({ enabled: t.Boolean(), fields: t.Array(t.String()) }),
  created_at: t.Number(),
  updated_at: t.Number(),
});
export const IndexCreateBody = open({
  fields: t.Array(t.String(), { minItems: 1, maxItems: MAX_INDEX_FIELDS }),
  unique: t.Optional(t.Boolean()),
  name: t.Optional(byService(t.String({ description: "default: made from the collection and fields" }))),
});
export const IndexBody = open({ name: t.String(), fields: t.Array(t.String()), unique: t.Boolean() });
export const FtsBody = open({ enabled: t.Boolean(), fields: t.Optional(t.Array(t.String())) });
const name = t.String({ minLength: 1 });
// An optional field given as null or "" counts as not given.
export const RelationCreateBody = open({
  from_col: name,
  from_field: name,
  to_col: name,
  type: t.Union(RELATION_TYPES.map((v) => t.Literal(v))),
  on_delete: t.Optional(t.Union([...ON_DELETE.map((v) => t.Literal(v)), t.Null(), t.Literal("")], { default: "restrict" })),
  to_field: t.Optional(t.Union([t.String({ description: "`many` only: the text field of to_col holding ids of from_col records" }), t.Null()])),
});
export const RelationBody = open({
  id: t.String(),
  from_col: t.String(),
  from_field: t.String(),
  to_col: t.String(),
  to_field: nullable(t.String()),
  type: RelationCreateBody.properties.type,
  on_delete: t.Union(ON_DELETE.map((v) => t.Literal(v))),
  created_at: t.Number(),
});
export const SchemaBody = open(
  { collections: t.Array(open({ name: t.String() })), relations: t.Optional(t.Array(open({ from_col: t.String(), from_field: t.String() }))) },
  "The collections (their objects without stats) and relations. In a file to apply, a field may carry `renamed_from`.",
);
export const SchemaApplyBody = t.Object(
  {
    schema: byService(SchemaBody),
    dry_run: t.Optional(t.Boolean({ description: "plan and check every change, then roll it back" })),
    prune: t.Optional(t.Boolean({ description: "also drop the collections, fields, indexes and relations the schema lacks" })),
  },
  { additionalProperties: false },
);
export const SchemaPlanBody = t.Object({
  changes: t.Array(t.Object({ action: t.String(), target: t.String(), detail: t.String() })),
  applied: t.Boolean({ description: "false for a dry run" }),
});
const settingSchema = (d: { kind: string; min?: number; max?: number }) =>
  d.kind === "boolean" ? t.Boolean() : d.kind === "string" ? t.String({ maxLength: 4096 }) : Type.Integer({ minimum: d.min, maximum: d.max });
const redirectUrls = t.Object({}, { additionalProperties: t.String(), description: "read-only: the callback address to register with each OAuth provider" });
export const SettingsBody = open(
  { ...Object.fromEntries(Object.entries(SETTING_DEFS).map(([k, d]) => [k, settingSchema(d)])), [OAUTH_REDIRECT_URLS]: redirectUrls },
  "Every runtime setting by name (see docs/API.md); a client secret that is set reads `********`.",
);
/** Some runtime settings, each of its type; the read-only redirect addresses may come back and are ignored. */
export const SettingsPatch = t.Object(
  {
    ...Object.fromEntries(Object.entries(SETTING_DEFS).map(([k, d]) => [k, t.Optional(settingSchema(d))])),
    [OAUTH_REDIRECT_URLS]: t.Optional(byService(t.Object({}, { additionalProperties: true, description: "read-only: ignored" }))),
  },
  { additionalProperties: false, description: "Some runtime settings by name (see docs/API.md)." },
);
const userFields = {
  email,
  password: t.Optional(password),
  roles: t.Optional(t.Array(t.String())),
  metadata: t.Optional(open({})),
  is_verified: t.Optional(t.Boolean()),
};
export const AdminUserCreateBody = t.Object(userFields, { additionalProperties: false });
export const AdminUserUpdateBody = t.Object({ ...userFields, email: t.Optional(email), totp_enabled: t.Optional(t.Literal(false)) }, { additionalProperties: false });
export const UserListQuery = t.Object({
  search: t.Optional(t.String({ description: "part of the email" })),
  limit: t.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  page: t.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
});
export const UserListBody = open({ items: t.Array(UserBody), total: Type.Integer() });
export const SessionInfo = open({
  id: t.String(),
  created_at: t.Number(),
  last_used_at: nullable(t.Number()),
  expires_at: t.Number(),
  ip: nullable(t.String()),
  user_agent: nullable(t.String()),
});
export const MailTestBody = open({ to: email });
export const MailStatusBody = t.Object({
  transport: t.Union([t.Literal("smtp"), t.Literal("log")], { description: "log: no SMTP_URL, mails are written to the server log" }),
  smtp_server: nullable(t.String({ description: "host:port of SMTP_URL" })),
  from: t.String(),
  sender_name: t.String({ description: "the app_name setting" }),
});
export const UserSecurityBody = t.Object({
  id: t.String(),
  email: t.String(),
  totp_enabled: t.Boolean(),
  locked_until: nullable(t.Number({ description: "Unix milliseconds until which logins are refused; null when not locked" })),
  oauth_accounts: t.Array(LinkedAccount),
  api_keys: t.Array(ApiKeyBody),
});

// ---- Webhooks and hooks (CONTRACT §15)

const webhookAction = t.Union(WEBHOOK_ACTIONS.map((a) => t.Literal(a)));
const webhookUrl = t.String({ description: "the http:// or https:// address the events are POSTed to (at most 2048 characters)" });
const webhookCollections = t.Array(t.String(), {
  minItems: 1,
  maxItems: MAX_WEBHOOK_COLLECTIONS,
  description: '"*" for every collection, or the names of existing collections',
});
const webhookActions = t.Array(webhookAction, { minItems: 1, description: "default: all four (a hard delete is a delete)" });
const webhookSecret = t.String({ description: "16 to 256 characters; default: one is made (`whsec_…`). Shown only in the answer that sets it" });
export const WebhookCreateBody = t.Object(
  { url: webhookUrl, collections: webhookCollections, actions: t.Optional(webhookActions), secret: t.Optional(webhookSecret), enabled: t.Optional(t.Boolean()) },
  { additionalProperties: false },
);
export const WebhookPatchBody = t.Object(
  {
    url: t.Optional(webhookUrl),
    collections: t.Optional(webhookCollections),
    actions: t.Optional(webhookActions),
    secret: t.Optional(t.Union([webhookSecret, t.Null()], { description: 'a new secret, null to make one, or "********" to keep it' })),
    enabled: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);
export const WebhookBody = open({
  id: t.String(),
  url: t.String(),
  collections: t.Array(t.String()),
  actions: t.Array(webhookAction),
  secret: t.String({ description: 'the secret in the answer that set it, else "********"' }),
  enabled: t.Boolean(),
  pending: Type.Integer({ description: "deliveries waiting to be sent or retried" }),
  created_at: t.Number(),
  updated_at: t.Number(),
});
const deliveryStatus = t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")]);
export const WebhookAttemptBody = open({
  id: t.String(),
  delivery_id: t.String({ description: "retry it with POST …/deliveries/:delivery_id/retry" }),
  event_id: t.String({ description: "the X-Baas-Event-Id sent" }),
  collection: t.String(),
  action: webhookAction,
  record_id: t.String(),
  attempt: Type.Integer({ description: "the X-Baas-Attempt sent (1 for the first)" }),
  at: millis("when it was sent"),
  duration_ms: Type.Integer(),
  ok: t.Boolean({ description: "answered 2xx" }),
  response_status: nullable(Type.Integer()),
  error: nullable(t.String({ description: "why it failed: the status and the start of the answer, a timeout, a refused connection" })),
  status: deliveryStatus,
  next_attempt_at: nullable(t.Number({ description: "when a pending delivery is tried next (Unix milliseconds)" })),
});
export const WebhookDeliveryBody = open({
  id: t.String(),
  webhook_id: t.String(),
  event_id: t.String(),
  collection: t.String(),
  action: webhookAction,
  record_id: t.String(),
  status: deliveryStatus,
  attempts: Type.Integer(),
  next_attempt_at: nullable(t.Number()),
  expires_at: millis("when it stops being retried"),
  created_at: t.Number(),
  updated_at: t.Number(),
});
const hookFile = open({
  file: t.String({ description: "the file's name in HOOKS_DIR" }),
  hooks: t.Array(open({ collection: t.String(), handlers: t.Array(t.String()) }), { description: "what the file's loaded version registers" }),
  error: nullable(t.String({ description: "why the file's last load failed (its previous version, if any, stays loaded)" })),
  loaded_at: nullable(millis("when the version in use was loaded")),
});
export const HooksBody = open({ dir: t.String({ description: "HOOKS_DIR" }), items: t.Array(hookFile) });

// ---- Realtime (CONTRACT §10)

export const Topic = t.Union([t.String({ description: "`<collection>` or `<collection>/<id>`" }), open({ collection: t.String(), filter: t.Optional(t.Union([t.String(), t.Array(t.String())])) })]);
// Also sent from node to node, so the realtime hub checks them itself.
export const SubscribeBody = open({ client_id: byService(t.String()), subscriptions: byService(t.Array(Topic)) });
export const SubscribedBody = open({ ok: t.Literal(true), subscriptions: t.Array(t.Unknown()) });
export const RealtimeQuery = t.Object({
  subscribe: t.Optional(t.String({ description: "comma-separated topics, for clients that send their credentials as headers" })),
  last_event_id: t.Optional(t.String()),
});

export const HealthBody = t.Object({ status: t.Literal("ok"), version: t.String() });
export const ReadyBody = t.Object({ status: t.Literal("ready"), version: t.String() });
