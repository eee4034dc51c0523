import type { AppContext } from "../context.ts";
import { catalogView, pendingCheck } from "../catalog/catalog.ts";
import type { CatalogSnapshot } from "../catalog/snapshot.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { newRecordId } from "../ids.ts";
import { WEBHOOK_COLUMNS, webhookFromRow, type Webhook, type WebhookAction, type WebhookRow } from "./rows.ts";

/**
 * The webhook outbox (CONTRACT §15): the change events of a transaction that webhooks subscribe to are
 * written to `_webhook_deliveries` by that transaction itself, just before it commits (inTransaction), so
 * the rows exist exactly when the changes do: a rollback leaves none, a crash after the commit loses none.
 * The delivery worker (worker.ts) sends them afterwards, never on the request's path.
 */

/** How long a delivery is tried, from the commit of its event. */
export const DELIVERY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The enabled webhooks by what they subscribe to, as the write path asks: "who wants this event?". */
interface WebhookSet {
  /** False when no enabled webhook exists: the write path does nothing more. */
  any: boolean;
  /** The enabled webhooks subscribed to a collection, by its lower-cased name. */
  byCollection: Map<string, Webhook[]>;
  /** Those subscribed to every collection ("*"). */
  all: Webhook[];
}

const NONE: WebhookSet = { any: false, byCollection: new Map(), all: [] };

/**
 * The webhooks read, by the catalog snapshot they were read with, as the relations are: every
 * webhook change bumps the catalog's version (touchCatalog), so each process loads a new view at its next
 * check, and a write transaction checks its view inside itself. A new view is a new read of `_webhooks`; a
 * write transaction that found the catalog unchanged reads the set already cached, without a statement.
 */
const sets = new WeakMap<CatalogSnapshot, WebhookSet>();

function cachedSet(ctx: AppContext): WebhookSet | undefined {
  const view = catalogView(ctx);
  return view.stale ? undefined : sets.get(view.snapshot);
}

async function loadSet(ctx: AppContext): Promise<WebhookSet> {
  const view = catalogView(ctx);
  const snapshot = view.snapshot;
  const rows = await ctx.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM _webhooks WHERE enabled = TRUE ORDER BY id`);
  const set: WebhookSet = rows.length ? { any: true, byCollection: new Map(), all: [] } : NONE;
  for (const w of rows.map(webhookFromRow)) {
    if (w.collections.includes("*")) {
      set.all.push(w);
      continue;
    }
    for (const c of w.collections) {
      const key = c.toLowerCase();
      set.byCollection.set(key, [...(set.byCollection.get(key) ?? []), w]);
    }
  }
  // Kept only if the view was not reloaded meanwhile (what was read may then be older than the view).
  if (view.snapshot === snapshot && !view.stale) sets.set(snapshot, set);
  return set;
}

/**
 * Writes the outbox rows of a transaction's events, inside it: called by inTransaction once the outermost
 * transaction's work is done, before its commit. Undefined, at the cost of two map lookups, when no webhook
 * wants any of them (no webhook at all: the usual case); else the rows go in one statement per 500.
 */
export function writeOutbox(ctx: AppContext, events: readonly ChangeEvent[]): Promise<void> | undefined {
  const pending = pendingCheck(ctx);
  const set = pending ? undefined : cachedSet(ctx);
  if (set) return set.any ? insertRows(ctx, set, events) : undefined;
  return (async () => {
    await pending;
    const loaded = cachedSet(ctx) ?? (await loadSet(ctx));
    if (loaded.any) await insertRows(ctx, loaded, events);
  })();
}

/** Rows per INSERT: 11 values each, under every engine's limit of bound values. */
const ROWS_PER_STATEMENT = 500;
const ROW = "(?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)";
const INSERT =
  "INSERT INTO _webhook_deliveries (id, webhook_id, event_id, collection, action, record_id, body, status, attempts, next_at, expires_at, created_at, updated_at) VALUES ";

/** The body a webhook receives: section 10's event; a hard delete is a `delete` of `{ _id }`. */
export function eventBody(event: ChangeEvent): { action: WebhookAction; body: string } {
  if (event.action === "hard_delete")
    return { action: "delete", body: JSON.stringify({ collection: event.collection, action: "delete", record: { _id: event.record._id } }) };
  return { action: event.action, body: JSON.stringify({ collection: event.collection, action: event.action, record: event.record }) };
}

function insertRows(ctx: AppContext, set: WebhookSet, events: readonly ChangeEvent[]): Promise<void> | undefined {
  const now = ctx.clock.now();
  const expires = now + DELIVERY_WINDOW_MS;
  const values: (string | number)[] = [];
  let rows = 0;
  for (const event of events) {
    const named = set.byCollection.get(event.collection.toLowerCase());
    if (!named && set.all.length === 0) continue;
    const action: WebhookAction = event.action === "hard_delete" ? "delete" : event.action;
    let shaped: { body: string } | undefined;
    let eventId: string | undefined;
    for (const list of [set.all, named]) {
      if (!list) continue;
      for (const w of list) {
        if (!w.actions.includes(action)) continue;
        // One id and one body per event, whichever webhooks receive it.
        shaped ??= eventBody(event);
        eventId ??= newRecordId(now);
        values.push(newRecordId(now), w.id, eventId, event.collection, action, String(event.record._id), shaped.body, now, expires, now, now);
        rows++;
      }
    }
  }
  if (rows === 0) return undefined;
  // Committed: the worker of this process looks at once (other processes find the rows when they next look).
  ctx.db.afterCommit(() => wakeWorker(ctx));
  return insertChunks(ctx, values, rows);
}

async function insertChunks(ctx: AppContext, values: (string | number)[], rows: number): Promise<void> {
  const perRow = values.length / rows;
  for (let start = 0; start < rows; start += ROWS_PER_STATEMENT) {
    const n = Math.min(ROWS_PER_STATEMENT, rows - start);
    const sql = INSERT + Array.from({ length: n }, () => ROW).join(", ");
    await ctx.db.run(sql, values.slice(start * perRow, (start + n) * perRow));
  }
}

// The worker of each context, told when its process committed outbox rows (see worker.ts).
const wakers = new WeakMap<AppContext, (webhooksChanged?: boolean) => void>();

/** Registers the function that wakes `ctx`'s delivery worker (null: none runs, as in the CLI). */
export function setOutboxWaker(ctx: AppContext, wake: ((webhooksChanged?: boolean) => void) | null): void {
  if (wake) wakers.set(ctx, wake);
  else wakers.delete(ctx);
}

/** Tells `ctx`'s delivery worker, if it runs in this process, that deliveries are due (or that webhooks changed). */
export function wakeWorker(ctx: AppContext, webhooksChanged = false): void {
  wakers.get(ctx)?.(webhooksChanged);
}
