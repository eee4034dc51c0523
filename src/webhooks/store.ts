import type { AppContext } from "../context.ts";
import { listCollections, touchCatalog } from "../catalog/catalog.ts";
import { isValidCollectionName } from "../catalog/types.ts";
import { badRequest, notFound } from "../errors.ts";
import { newRecordId } from "../ids.ts";
import { getSetting, MASK } from "../settings/settings.ts";
import { inTransaction } from "../transaction.ts";
import { privateHostReason } from "./address.ts";
import { DELIVERY_WINDOW_MS, wakeWorker } from "./outbox.ts";
import {
  MAX_WEBHOOK_COLLECTIONS,
  MAX_WEBHOOK_SECRET,
  MAX_WEBHOOK_URL,
  WEBHOOK_ACTIONS,
  WEBHOOK_COLUMNS,
  webhookFromRow,
  webhookJson,
  type Webhook,
  type WebhookAction,
  type WebhookJson,
  type WebhookRow,
} from "./rows.ts";
import { newWebhookSecret } from "./signing.ts";

/**
 * Webhooks (CONTRACT §15), for the admin API and the CLI: which change events are POSTed where, and what
 * became of the deliveries. Each change bumps the catalog's version (touchCatalog), so the write path of every
 * process (outbox.ts) applies it from its next write transaction on.
 */

// ---- Admin API and CLI

/** A new webhook as its schema checked it (WebhookCreateBody). */
export interface NewWebhook {
  url: string;
  collections: string[];
  actions?: string[];
  secret?: string;
  enabled?: boolean;
}

/** A change of a webhook (WebhookPatchBody); `secret: null` makes a new one. */
export interface WebhookPatch {
  url?: string;
  collections?: string[];
  actions?: string[];
  secret?: string | null;
  enabled?: boolean;
}

/**
 * The address checked: an absolute http(s) URL. IMPORTANT: the server POSTs to it from inside the network
 * it runs in, so it is a way to reach internal services (SSRF). Only admins set it; with the setting
 * `webhooks_allow_private_addresses` false, an address that names a private, loopback or link-local host
 * is refused here, and every delivery checks the addresses the name resolves to (worker.ts).
 */
async function checkUrl(ctx: AppContext, raw: string): Promise<string> {
  const url = raw.trim();
  if (url.length > MAX_WEBHOOK_URL) throw badRequest(`url is longer than ${MAX_WEBHOOK_URL} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest("url must be an absolute http:// or https:// URL");
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) throw badRequest("url must be an absolute http:// or https:// URL");
  if (!(await getSetting(ctx, "webhooks_allow_private_addresses"))) {
    const reason = privateHostReason(parsed.hostname);
    if (reason) throw badRequest(`url names ${reason}, and webhooks_allow_private_addresses is false`);
  }
  return url;
}

/** The collections, spelled as the catalog spells those it has (others as given); `["*"]` when "*" is among them. */
async function checkCollections(ctx: AppContext, names: string[]): Promise<string[]> {
  if (names.length === 0 || names.length > MAX_WEBHOOK_COLLECTIONS)
    throw badRequest(`collections must list 1 to ${MAX_WEBHOOK_COLLECTIONS} collection names, or "*"`);
  if (names.includes("*")) return ["*"];
  const known = new Map((await listCollections(ctx)).map((c) => [c.name.toLowerCase(), c.name]));
  const out: string[] = [];
  for (const n of names) {
    // A collection made later (a webhook set up before the schema) is followed from its first event.
    const name = known.get(n.toLowerCase()) ?? (isValidCollectionName(n) ? n : undefined);
    if (!name) throw badRequest(`invalid collection name "${n.slice(0, 80)}"`);
    if (!out.some((o) => o.toLowerCase() === name.toLowerCase())) out.push(name);
  }
  return out;
}

/** The actions checked, each once, in the order of WEBHOOK_ACTIONS; all of them when not given. */
function checkActions(given: string[] | undefined): WebhookAction[] {
  if (given === undefined) return [...WEBHOOK_ACTIONS];
  if (given.length === 0) throw badRequest(`actions must list at least one of: ${WEBHOOK_ACTIONS.join(", ")}`);
  for (const a of given)
    if (!(WEBHOOK_ACTIONS as readonly string[]).includes(a)) throw badRequest(`actions must be one of: ${WEBHOOK_ACTIONS.join(", ")}`);
  return WEBHOOK_ACTIONS.filter((a) => given.includes(a));
}

function checkSecret(secret: string): string {
  if (secret === MASK) throw badRequest("secret must be a new secret, not the mask");
  if (secret.length < 1 || secret.length > MAX_WEBHOOK_SECRET) throw badRequest(`secret must be 1 to ${MAX_WEBHOOK_SECRET} characters`);
  return secret;
}

/** The pending deliveries of each webhook. */
async function pendingCounts(ctx: AppContext, id?: string): Promise<Map<string, number>> {
  const rows = await ctx.db.all<{ webhook_id: string; n: number }>(
    `SELECT webhook_id, COUNT(*) AS n FROM _webhook_deliveries WHERE status = 'pending'${id ? " AND webhook_id = ?" : ""} GROUP BY webhook_id`,
    id ? [id] : [],
  );
  return new Map(rows.map((r) => [r.webhook_id, Number(r.n)]));
}

async function findWebhook(ctx: AppContext, id: string): Promise<Webhook> {
  const row = await ctx.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM _webhooks WHERE id = ?`, [id]);
  if (!row) throw notFound("webhook not found");
  return webhookFromRow(row);
}

/** `POST /admin/webhooks`: stores a webhook; the answer carries its secret (given or made), the only time it is shown. */
export async function createWebhook(ctx: AppContext, body: NewWebhook): Promise<WebhookJson> {
  const url = await checkUrl(ctx, body.url);
  const actions = checkActions(body.actions);
  const secret = body.secret === undefined ? newWebhookSecret() : checkSecret(body.secret);
  return await inTransaction(ctx, async () => {
    const now = ctx.clock.now();
    const w: Webhook = {
      id: newRecordId(now),
      url,
      collections: await checkCollections(ctx, body.collections),
      actions,
      secret,
      enabled: body.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    };
    await ctx.db.run(`INSERT INTO _webhooks (${WEBHOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
      w.id,
      w.url,
      JSON.stringify(w.collections),
      JSON.stringify(w.actions),
      w.secret,
      w.enabled,
      w.createdAt,
      w.updatedAt,
    ]);
    // Write transactions of every process learn of the webhook at their next catalog check (webhookSet).
    await touchCatalog(ctx);
    ctx.db.afterCommit(() => wakeWorker(ctx, true));
    return webhookJson(w, { showSecret: true });
  });
}

/** `GET /admin/webhooks`: every webhook, oldest first, secrets masked. */
export async function listWebhooks(ctx: AppContext): Promise<{ items: WebhookJson[] }> {
  const [rows, pending] = await Promise.all([ctx.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM _webhooks ORDER BY id`), pendingCounts(ctx)]);
  return { items: rows.map((r) => webhookJson(webhookFromRow(r), { pending: pending.get(r.id) ?? 0 })) };
}

/** `GET /admin/webhooks/:id`. */
export async function getWebhook(ctx: AppContext, id: string): Promise<WebhookJson> {
  const w = await findWebhook(ctx, id);
  return webhookJson(w, { pending: (await pendingCounts(ctx, id)).get(id) ?? 0 });
}

/**
 * `PATCH /admin/webhooks/:id`: changes what is given. The mask sent back as the secret keeps it; a new secret,
 * or `null` for one made here, is shown in this answer. Events already in the outbox keep their webhook's match.
 */
export async function updateWebhook(ctx: AppContext, id: string, patch: WebhookPatch): Promise<WebhookJson> {
  const url = patch.url === undefined ? undefined : await checkUrl(ctx, patch.url);
  const actions = patch.actions === undefined ? undefined : checkActions(patch.actions);
  const secret = patch.secret === undefined || patch.secret === MASK ? undefined : patch.secret === null ? newWebhookSecret() : checkSecret(patch.secret);
  const w = await inTransaction(ctx, async () => {
    const w = await findWebhook(ctx, id);
    if (url !== undefined) w.url = url;
    if (patch.collections !== undefined) w.collections = await checkCollections(ctx, patch.collections);
    if (actions !== undefined) w.actions = actions;
    if (secret !== undefined) w.secret = secret;
    if (patch.enabled !== undefined) w.enabled = patch.enabled;
    w.updatedAt = ctx.clock.now();
    await ctx.db.run("UPDATE _webhooks SET url = ?, collections = ?, actions = ?, secret = ?, enabled = ?, updated_at = ? WHERE id = ?", [
      w.url,
      JSON.stringify(w.collections),
      JSON.stringify(w.actions),
      w.secret,
      w.enabled,
      w.updatedAt,
      w.id,
    ]);
    await touchCatalog(ctx);
    // This process's worker sends with the new address and secret at once; enabled again, its waiting deliveries are due.
    ctx.db.afterCommit(() => wakeWorker(ctx, true));
    return w;
  });
  return webhookJson(w, { showSecret: secret !== undefined, pending: (await pendingCounts(ctx, id)).get(id) ?? 0 });
}

/** `DELETE /admin/webhooks/:id`: the webhook, its outbox rows (nothing more is sent) and its attempts go. */
export async function deleteWebhook(ctx: AppContext, id: string): Promise<{ ok: true }> {
  return await inTransaction(ctx, async () => {
    await findWebhook(ctx, id);
    await ctx.db.run("DELETE FROM _webhook_attempts WHERE webhook_id = ?", [id]);
    await ctx.db.run("DELETE FROM _webhook_deliveries WHERE webhook_id = ?", [id]);
    await ctx.db.run("DELETE FROM _webhooks WHERE id = ?", [id]);
    await touchCatalog(ctx);
    ctx.db.afterCommit(() => wakeWorker(ctx, true));
    return { ok: true as const };
  });
}

// ---- Deliveries

/** Most attempts kept (and listed) per webhook. */
export const ATTEMPTS_KEPT = 100;

export type DeliveryStatus = "pending" | "delivered" | "failed";

/** One attempt as `GET /admin/webhooks/:id/deliveries` lists it, with its delivery's event and current state. */
export interface AttemptJson {
  id: string;
  delivery_id: string;
  event_id: string;
  collection: string;
  action: string;
  record_id: string;
  attempt: number;
  at: number;
  duration_ms: number;
  ok: boolean;
  response_status: number | null;
  error: string | null;
  status: DeliveryStatus;
  next_attempt_at: number | null;
}

/** `GET /admin/webhooks/:id/deliveries`: the last 100 attempts, newest first. */
export async function listAttempts(ctx: AppContext, id: string): Promise<{ items: AttemptJson[] }> {
  await findWebhook(ctx, id);
  const rows = await ctx.db.all<Record<string, unknown>>(
    `SELECT a.id, a.delivery_id, d.event_id, d.collection, d.action, d.record_id, a.attempt, a.at, a.duration_ms, a.ok,
       a.response_status, a.error, d.status, d.next_at, d.claim
     FROM _webhook_attempts a JOIN _webhook_deliveries d ON d.id = a.delivery_id
     WHERE a.webhook_id = ? ORDER BY a.id DESC LIMIT ${ATTEMPTS_KEPT}`,
    [id],
  );
  return {
    items: rows.map((r) => ({
      id: String(r.id),
      delivery_id: String(r.delivery_id),
      ...eventOf(r),
      attempt: Number(r.attempt),
      at: Number(r.at),
      duration_ms: Number(r.duration_ms),
      ok: Boolean(r.ok),
      response_status: r.response_status === null ? null : Number(r.response_status),
      error: (r.error as string | null) ?? null,
      status: r.status as DeliveryStatus,
      next_attempt_at: r.status === "pending" ? Number(r.next_at) : null,
    })),
  };
}

/** The event a row of `_webhook_deliveries` (or a join with it) delivers. */
function eventOf(r: Record<string, unknown>): Pick<DeliveryJson, "event_id" | "collection" | "action" | "record_id"> {
  return { event_id: String(r.event_id), collection: String(r.collection), action: String(r.action), record_id: String(r.record_id) };
}

/** A delivery as `POST …/deliveries/:id/retry` answers it. */
export interface DeliveryJson {
  id: string;
  webhook_id: string;
  event_id: string;
  collection: string;
  action: string;
  record_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

/**
 * `POST /admin/webhooks/:id/deliveries/:deliveryId/retry`: the delivery (pending, delivered or failed) is due
 * now, for another 24 hours; the same event id and body are sent again. An attempt running meanwhile no longer
 * decides its state (its claim is dropped), so the event is sent at least once more.
 */
export async function retryDelivery(ctx: AppContext, id: string, deliveryId: string): Promise<DeliveryJson> {
  return await inTransaction(ctx, async () => {
    await findWebhook(ctx, id);
    // The id may be an attempt's, as `GET …/deliveries` lists them (each with its `delivery_id`): its delivery is retried.
    const attempt = await ctx.db.get<{ delivery_id: string }>("SELECT delivery_id FROM _webhook_attempts WHERE id = ? AND webhook_id = ?", [deliveryId, id]);
    if (attempt) deliveryId = attempt.delivery_id;
    const now = ctx.clock.now();
    const { changes } = await ctx.db.run(
      "UPDATE _webhook_deliveries SET status = 'pending', next_at = ?, claim = NULL, expires_at = ?, updated_at = ? WHERE id = ? AND webhook_id = ?",
      [now, now + DELIVERY_WINDOW_MS, now, deliveryId, id],
    );
    if (changes === 0) throw notFound("delivery not found");
    const r = (await ctx.db.get<Record<string, unknown>>(
      "SELECT id, webhook_id, event_id, collection, action, record_id, status, attempts, next_at, expires_at, created_at, updated_at FROM _webhook_deliveries WHERE id = ?",
      [deliveryId],
    ))!;
    ctx.db.afterCommit(() => wakeWorker(ctx));
    return {
      id: String(r.id),
      webhook_id: String(r.webhook_id),
      ...eventOf(r),
      status: r.status as DeliveryStatus,
      attempts: Number(r.attempts),
      next_attempt_at: Number(r.next_at),
      expires_at: Number(r.expires_at),
      created_at: Number(r.created_at),
      updated_at: Number(r.updated_at),
    };
  });
}

/** The webhooks by id, as stored now (enabled or not): what the worker delivers with. */
export async function webhooksById(ctx: AppContext): Promise<Map<string, Webhook>> {
  const rows = await ctx.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM _webhooks`);
  return new Map(rows.map((r) => [r.id, webhookFromRow(r)]));
}
