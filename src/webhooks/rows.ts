import { MASK } from "../settings/settings.ts";

// What a webhook is, as stored in `_webhooks` and as the admin API shows it (CONTRACT §15).

/** The actions a webhook can subscribe to: §10's event names (a hard delete is a `delete`). */
export const WEBHOOK_ACTIONS = ["create", "update", "delete", "restore"] as const;
export type WebhookAction = (typeof WEBHOOK_ACTIONS)[number];

/** Most collection names one webhook lists. */
export const MAX_WEBHOOK_COLLECTIONS = 100;
/** Longest webhook address. */
export const MAX_WEBHOOK_URL = 2048;
/** Longest secret an admin may choose (any length from 1: the admin owns the receiver; the default one is 256 random bits). */
export const MAX_WEBHOOK_SECRET = 256;

/** A webhook as stored. */
export interface Webhook {
  id: string;
  url: string;
  /** `["*"]` for every collection, else collection names as the catalog spells them. */
  collections: string[];
  actions: WebhookAction[];
  secret: string;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface WebhookRow {
  id: string;
  url: string;
  collections: string;
  actions: string;
  secret: string;
  enabled: number | boolean;
  created_at: number;
  updated_at: number;
}

export const WEBHOOK_COLUMNS = "id, url, collections, actions, secret, enabled, created_at, updated_at";

export function webhookFromRow(r: WebhookRow): Webhook {
  return {
    id: r.id,
    url: r.url,
    collections: JSON.parse(r.collections) as string[],
    actions: JSON.parse(r.actions) as WebhookAction[],
    secret: r.secret,
    enabled: Boolean(r.enabled),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The webhook object of the admin API. The secret is shown only in the answer of the request that set it. */
export function webhookJson(w: Webhook, opts: { showSecret?: boolean; pending?: number } = {}) {
  return {
    id: w.id,
    url: w.url,
    collections: w.collections,
    actions: w.actions,
    secret: opts.showSecret ? w.secret : MASK,
    enabled: w.enabled,
    pending: opts.pending ?? 0,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
  };
}
export type WebhookJson = ReturnType<typeof webhookJson>;

