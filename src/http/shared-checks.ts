import { MAX_INDEX_FIELDS } from "../collections/indexes.ts";
import { ON_DELETE, RELATION_TYPES } from "../catalog/types.ts";
import { SETTING_DEFS } from "../settings/settings.ts";
import { bodyChecker, type BodyIssue, type BodyMessages } from "./check.ts";
import { MAX_WEBHOOK_COLLECTIONS, WEBHOOK_ACTIONS } from "../webhooks/rows.ts";
import { IndexCreateBody, RelationCreateBody, SettingsPatch, WebhookCreateBody, WebhookPatchBody } from "./schemas.ts";

/** Body checkers the CLI runs too, on the bodies it builds from its arguments, for the same answers. */

const KIND_TEXT = { boolean: "a boolean", string: "a string", integer: "an integer" } as const;

/** The message of a bad value: its type, its range or its length, as `setting "<key>" …`. */
function settingMessage({ key, error }: BodyIssue): string {
  const def: { kind: keyof typeof KIND_TEXT; min?: number; max?: number } = SETTING_DEFS[key as keyof typeof SETTING_DEFS];
  if (error.schema.maxLength !== undefined && typeof error.value === "string") return `setting "${key}" is too long`;
  if (def.kind === "integer" && Number.isInteger(error.value)) return `setting "${key}" must be between ${def.min} and ${def.max}`;
  return `setting "${key}" must be ${KIND_TEXT[def.kind]}`;
}

const messages: BodyMessages = {
  "": "settings must be a JSON object",
  "*": ({ key }) => `unknown setting "${key}"`,
  ...Object.fromEntries(Object.keys(SETTING_DEFS).map((k) => [k, settingMessage])),
};

/** Checks a settings patch (PATCH /admin/settings, and `baas settings set` with the value read by its type). */
export const settingsPatch = bodyChecker(SettingsPatch, messages);

const ONE_OF: Record<string, readonly string[]> = { type: RELATION_TYPES, on_delete: ON_DELETE };

/** A relation field's message: null and "" count as not given, as a missing key does. */
function relationMessage({ key, error }: BodyIssue): string {
  const v = error.value;
  if (v === undefined || v === null || v === "") return `${key} is required`;
  if (typeof v !== "string") return `${key} must be a string`;
  return `${key} must be one of: ${ONE_OF[key]!.join(", ")}`;
}

/** Checks a new relation (POST /admin/relations, `baas relations create`). */
export const relationCreate = bodyChecker(
  RelationCreateBody,
  Object.fromEntries(Object.keys(RelationCreateBody.properties).map((k) => [k, relationMessage])),
);

/** Checks a new index (POST /admin/collections/:name/indexes, `baas indexes create`). */
export const indexCreate = bodyChecker(IndexCreateBody, {
  fields: ({ path }) => (path.length ? "fields must be an array of field names" : `fields must be an array of 1 to ${MAX_INDEX_FIELDS} field names`),
  unique: "unique must be true or false",
});

const webhookMessages: BodyMessages = {
  "": "the request body must be a JSON object",
  collections: `collections must list 1 to ${MAX_WEBHOOK_COLLECTIONS} collection names, or "*"`,
  actions: `actions must list one or more of: ${WEBHOOK_ACTIONS.join(", ")}`,
};

/** Checks a new webhook (POST /admin/webhooks, `baas webhooks add`); the service checks what the values mean. */
export const webhookCreate = bodyChecker(WebhookCreateBody, webhookMessages);

/** Checks a change of a webhook (PATCH /admin/webhooks/:id). */
export const webhookPatch = bodyChecker(WebhookPatchBody, { ...webhookMessages, secret: "secret must be a string, or null to make a new one" });
