import type { AppContext } from "../context.ts";
import { listParam } from "../db/condition.ts";
import { newRecordId } from "../ids.ts";
import { getSetting } from "../settings/settings.ts";
import { VERSION } from "../version.ts";
import { publicAddress } from "./address.ts";
import { setOutboxWaker } from "./outbox.ts";
import { ATTEMPTS_KEPT } from "./store.ts";
import { WEBHOOK_COLUMNS, webhookFromRow, type Webhook, type WebhookRow } from "./rows.ts";
import { signBody } from "./signing.ts";

/**
 * The delivery worker (CONTRACT §15): POSTs the outbox's due deliveries, in the background of `baas serve`
 * (never on a request's path, and never in the CLI). At least once: a delivery is claimed before it is sent
 * and finished only once answered; a non-2xx answer, a timeout or a crash leaves it due again, after 1 s,
 * then twice as long each time up to an hour, until 24 hours after its event; then it is marked failed.
 * Processes sharing a PostgreSQL database each run a worker: a claim takes rows no other worker holds
 * (FOR UPDATE SKIP LOCKED), so each attempt is made by one of them.
 */

export interface WorkerOptions {
  /** Deliveries in flight at once, over every webhook. */
  concurrency?: number;
  /** Deliveries in flight at once to one webhook, so a slow receiver leaves room for the others. */
  perWebhook?: number;
  /** How long an attempt may take, answer included (10 s). */
  timeoutMs?: number;
  /** How often it looks for due deliveries when nothing woke it (deliveries of another process, retries). */
  pollMs?: number;
  /** How long a claim holds beyond the attempt's timeout before another worker may take the delivery. */
  leaseMarginMs?: number;
  /**
   * The shortest time between two rounds of claiming and recording (20 ms): under a stream of writes, each round
   * claims what the commits of that time made due and records the attempts that ended in it, in one transaction
   * each, rather than one per commit and per answer.
   */
  batchMs?: number;
}

export interface WebhookWorker {
  /** Looks for due deliveries now. */
  poke(): void;
  /** Settles once nothing is claimed, in flight or waiting to be recorded (for tests and benchmarks). */
  idle(): Promise<void>;
  /**
   * Stops claiming, gives the attempts in flight `graceMs` to end (recorded as usual), then abandons the rest:
   * their claims are dropped so that they are due again at once (they may have arrived: at least once).
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
}

/** A claimed delivery. */
interface Claimed {
  id: string;
  webhook_id: string;
  event_id: string;
  body: string;
  attempts: number;
  expires_at: number;
  claim: string;
}

/** What an attempt came to, waiting to be written. */
interface Outcome {
  delivery: Claimed;
  attempt: number;
  at: number;
  durationMs: number;
  ok: boolean;
  status: number | null;
  error: string | null;
}

const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60 * 60 * 1000;
/** Bytes of a receiver's answer kept as the error of a failed attempt (the rest is not read). */
const ANSWER_SNIPPET = 512;
/** A process that used more than this share of one core over the last BUSY_WINDOW_MS is busy (see `soon`). */
const BUSY_SHARE = 0.75;
const BUSY_WINDOW_MS = 200;
/** The time between rounds while the process is busy. */
const BUSY_ROUND_MS = 250;

/** CPU time (user + system) this process has used, in µs. */
function cpuNow(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}
/** How long the worker uses the webhooks it read (changes made in this process apply at once). */
const CONFIG_MS = 250;
/** How often finished deliveries and old attempts are pruned, at most. */
const PRUNE_EVERY_MS = 10_000;

/** The wait before the attempt after the `attempt`-th failed one: 1 s, 2 s, 4 s… up to 1 h. */
export function backoffMs(attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(attempt - 1, 30));
}

const CLAIM_CHECK = "SELECT id FROM _webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND next_at <= ? LIMIT 1";

/** Starts the worker of `ctx` (one per server process). */
export function startWebhookWorker(ctx: AppContext, opts: WorkerOptions = {}): WebhookWorker {
  const concurrency = opts.concurrency ?? 64;
  const perWebhook = opts.perWebhook ?? 32;
  const batchMs = opts.batchMs ?? 20;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const pollMs = opts.pollMs ?? 1_000;
  const leaseMs = timeoutMs + (opts.leaseMarginMs ?? 30_000);
  // Claims of this worker: its own prefix, then a count (a claim names the rows one pump took for one webhook).
  const node = newRecordId(Date.now()).slice(-10);
  let claims = 0;
  // The outer conditions repeat the inner ones: a row another worker claimed after this statement's snapshot is
  // looked at again as it now is (PostgreSQL rechecks them on the row's latest version), and left alone. The
  // attempt is counted when claimed: one cut short by a crash (sent, never recorded) keeps its number, and the
  // next worker sends the next one.
  const claimSql = `UPDATE _webhook_deliveries SET next_at = ?, claim = ?, updated_at = ?, attempts = attempts + 1 WHERE id IN (
      SELECT id FROM _webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND next_at <= ?
      ORDER BY next_at LIMIT ?${ctx.db.sql.skipLocked}
    ) AND status = 'pending' AND next_at <= ? RETURNING id, webhook_id, event_id, body, attempts, expires_at, claim`;

  let stopped = false;
  let pumping: Promise<void> | null = null;
  let pumpAgain = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let timerAt = Infinity;
  let lastRound = 0;
  // How busy the process is: the share of one core it used over the last BUSY_WINDOW_MS, measured at most that often.
  let busy = false;
  let cpuAt = { wall: performance.now(), cpu: cpuNow() };
  const measureBusy = () => {
    const wall = performance.now();
    if (wall - cpuAt.wall < BUSY_WINDOW_MS) return busy;
    const cpu = cpuNow();
    busy = (cpu - cpuAt.cpu) / 1000 / (wall - cpuAt.wall) > BUSY_SHARE;
    cpuAt = { wall, cpu };
    return busy;
  };
  // A round was asked for (commits, answers) and has not started yet.
  let wanted = false;
  const inFlight = new Map<string, { webhook: string; abort: AbortController; done: Promise<void>; claim: string }>();
  const perHook = new Map<string, number>();
  let outcomes: Outcome[] = [];
  let lastPrune = 0;
  let prunedSince = true;
  const stopAll = new AbortController();
  // The enabled webhooks, read again at most every CONFIG_MS (and at once after a webhook of this process changed):
  // a round under load must not read them each time.
  let hooksRead: { hooks: Webhook[]; at: number; changes: number } | null = null;
  /** How many times this process changed the webhooks: a list read before the last change is not used. */
  let hooksChanged = 0;

  const log = (err: unknown, what: string) => ctx.log.error(what, { error: err instanceof Error ? err.message : String(err) });

  /** Runs a round in `ms` (or sooner if one is already set for sooner). */
  const schedule = (ms: number) => {
    if (stopped) return;
    const at = Date.now() + ms;
    if (timer && timerAt <= at) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => {
      timer = null;
      timerAt = Infinity;
      pump();
    }, ms);
    // A waiting worker never keeps the process alive by itself.
    (timer as { unref?: () => void }).unref?.();
  };

  /**
   * Asks for a round as soon as the last one is batchMs old: commits and answers meanwhile join it. Deliveries
   * give way to requests: while the process keeps a core busy, rounds are BUSY_ROUND_MS apart, so sending (a POST
   * costs about half a create) takes a small share of the CPU and the outbox catches up once the load eases.
   * Nothing is lost meanwhile: the deliveries wait in the outbox.
   */
  const soon = () => {
    if (stopped) return;
    if (pumping) pumpAgain = true;
    else {
      wanted = true;
      schedule(Math.max(0, lastRound + (measureBusy() ? BUSY_ROUND_MS : batchMs) - Date.now()));
    }
  };

  /** One round: records the attempts that ended, then claims what is due for every webhook with room and sends it. */
  function pump(): void {
    if (stopped) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumpAgain = false;
    wanted = false;
    lastRound = Date.now();
    pumping = (async () => {
      await flush();
      await claimAndSend();
    })()
      .catch((err) => log(err, "webhook worker: claiming deliveries failed"))
      .finally(() => {
        pumping = null;
        if (pumpAgain) soon();
        else schedule(pollMs);
        void maybePrune();
      });
  }

  /** Writes the outcomes gathered since the last round, in one transaction. */
  async function flush(): Promise<void> {
    if (outcomes.length === 0) return;
    const batch = outcomes;
    outcomes = [];
    try {
      await writeOutcomes(batch);
    } catch (err) {
      // The claims expire, and those deliveries are tried again: at least once.
      log(err, "webhook worker: recording attempts failed");
    }
  }

  async function enabledWebhooks(): Promise<Webhook[]> {
    if (hooksRead && hooksRead.changes === hooksChanged && Date.now() - hooksRead.at < CONFIG_MS) return hooksRead.hooks;
    const at = Date.now();
    // IMPORTANT: counted before the read: a list read while the webhooks changed may predate the change (on
    // PostgreSQL the read is a round trip), so the next round (the change asked for it) reads them again.
    const changes = hooksChanged;
    const hooks = (await ctx.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM _webhooks WHERE enabled = TRUE ORDER BY id`)).map(webhookFromRow);
    hooksRead = { hooks, at, changes };
    return hooks;
  }

  async function claimAndSend(): Promise<void> {
    if (inFlight.size >= concurrency) return;
    const hooks = await enabledWebhooks();
    // Read once per round that sends something: a change of this safety setting applies to the next attempt.
    let allowPrivate: boolean | undefined;
    for (const hook of hooks) {
      const room = Math.min(concurrency - inFlight.size, perWebhook - (perHook.get(hook.id) ?? 0));
      if (room <= 0 || stopped) continue;
      const now = ctx.clock.now();
      // A plain read first: a poll that finds nothing due writes nothing (on SQLite it takes no write lock).
      if (!(await ctx.db.get(CLAIM_CHECK, [hook.id, now]))) continue;
      const claim = `${node}.${++claims}`;
      const rows = await ctx.db.all<Claimed>(claimSql, [now + leaseMs, claim, now, hook.id, now, room, now]);
      if (rows.length) allowPrivate ??= await getSetting(ctx, "webhooks_allow_private_addresses");
      for (const row of rows) send({ ...row, attempts: Number(row.attempts), expires_at: Number(row.expires_at) }, hook, allowPrivate!);
      // As many as there was room for: more may be due.
      if (rows.length === room) pumpAgain = true;
    }
  }

  function send(delivery: Claimed, hook: Webhook, allowPrivate: boolean): void {
    const abort = new AbortController();
    perHook.set(hook.id, (perHook.get(hook.id) ?? 0) + 1);
    const done = attempt(delivery, hook, allowPrivate, abort.signal)
      .then((outcome) => {
        if (outcome) record(outcome);
      })
      .finally(() => {
        inFlight.delete(delivery.id);
        perHook.set(hook.id, (perHook.get(hook.id) ?? 1) - 1);
      });
    inFlight.set(delivery.id, { webhook: hook.id, abort, done, claim: delivery.claim });
  }

  /** One POST; null when the worker was stopped meanwhile (the attempt is abandoned, not recorded). */
  async function attempt(d: Claimed, hook: Webhook, allowPrivate: boolean, abort: AbortSignal): Promise<Outcome | null> {
    // Counted by the claim (claimSql).
    const n = d.attempts;
    const at = ctx.clock.now();
    const started = performance.now();
    const outcome = (ok: boolean, status: number | null, error: string | null): Outcome => ({
      delivery: d,
      attempt: n,
      at,
      durationMs: Math.round(performance.now() - started),
      ok,
      status,
      error,
    });
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), abort, stopAll.signal]);
    try {
      let target = hook.url;
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "user-agent": `baas-webhooks/${VERSION}`,
        "x-baas-event-id": d.event_id,
        "x-baas-delivery-id": d.id,
        "x-baas-attempt": String(n),
        "x-baas-signature": signBody(d.body, hook.secret),
      };
      if (!allowPrivate) {
        const url = new URL(hook.url);
        const address = await publicAddress(url.hostname);
        // Plain HTTP goes to the address just checked, so a name that resolves again to a private address in
        // between cannot redirect it (DNS rebinding). HTTPS keeps the name: the certificate must match it.
        if (url.protocol === "http:") {
          headers.host = url.host;
          url.hostname = address.includes(":") ? `[${address}]` : address;
          target = url.href;
        }
      }
      // Redirects are not followed: the answer to a POST is a 3xx, which counts as a failure (and cannot lead
      // the server to an address nobody checked).
      const res = await fetch(target, { method: "POST", headers, body: d.body, redirect: "manual", signal });
      const ok = res.status >= 200 && res.status < 300;
      const snippet = await readSnippet(res, ok ? 0 : ANSWER_SNIPPET, signal);
      return outcome(ok, res.status, ok ? null : `HTTP ${res.status}${snippet ? `: ${snippet}` : ""}`);
    } catch (err) {
      if (abort.aborted || stopAll.signal.aborted) return null;
      const e = err as { name?: string; message?: string };
      const why = e?.name === "TimeoutError" ? `timed out after ${timeoutMs} ms` : (e?.message ?? String(err));
      return outcome(false, null, why.slice(0, 500));
    }
  }

  function record(o: Outcome): void {
    outcomes.push(o);
    if (!o.ok && o.attempt === 1)
      ctx.log.warn("webhook delivery failed; it will be retried", { webhook: o.delivery.webhook_id, event: o.delivery.event_id, error: o.error });
    // The next round records it, and fills the slot it freed.
    soon();
  }

  async function writeOutcomes(batch: Outcome[]): Promise<void> {
    const now = ctx.clock.now();
    await ctx.db.transaction(async () => {
      // A delivery deleted meanwhile (its webhook was) has no attempt to keep.
      const ids = [...new Set(batch.map((o) => o.delivery.id))];
      const present = new Set(
        (await ctx.db.all<{ id: string }>(`SELECT id FROM _webhook_deliveries WHERE id ${ctx.db.sql.inList}`, [listParam(ids)])).map((r) => r.id),
      );
      const kept = batch.filter((o) => present.has(o.delivery.id));
      if (kept.length === 0) return;
      const values: (string | number | boolean | null)[] = [];
      for (const o of kept) values.push(newRecordId(now), o.delivery.id, o.delivery.webhook_id, o.attempt, o.at, o.durationMs, o.status, o.error, o.ok);
      await ctx.db.run(
        `INSERT INTO _webhook_attempts (id, delivery_id, webhook_id, attempt, at, duration_ms, response_status, error, ok) VALUES ${kept.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
        values,
      );
      // The state is the attempt's only while its claim holds: a retry asked meanwhile, or another worker that
      // took the delivery after the claim expired, decides it instead.
      const delivered = new Map<string, string[]>();
      for (const o of kept) if (o.ok) delivered.set(o.delivery.claim, [...(delivered.get(o.delivery.claim) ?? []), o.delivery.id]);
      for (const [claim, list] of delivered)
        await ctx.db.run(
          `UPDATE _webhook_deliveries SET status = 'delivered', claim = NULL, updated_at = ? WHERE claim = ? AND id ${ctx.db.sql.inList}`,
          [now, claim, listParam(list)],
        );
      for (const o of kept) {
        if (o.ok) continue;
        const next = now + backoffMs(o.attempt);
        const failed = next > o.delivery.expires_at;
        await ctx.db.run("UPDATE _webhook_deliveries SET status = ?, next_at = ?, claim = NULL, updated_at = ? WHERE id = ? AND claim = ?", [
          failed ? "failed" : "pending",
          next,
          now,
          o.delivery.id,
          o.delivery.claim,
        ]);
        if (failed) ctx.log.warn("webhook delivery failed for good", { webhook: o.delivery.webhook_id, event: o.delivery.event_id, attempts: o.attempt, error: o.error });
      }
    });
    prunedSince = true;
  }

  /**
   * Keeps the history bounded: the last ATTEMPTS_KEPT attempts of each webhook, and finished deliveries while one
   * of their attempts is listed (so the list can retry them). Each statement stands alone: workers of other
   * processes may prune at the same time.
   */
  async function maybePrune(): Promise<void> {
    const now = Date.now();
    if (!prunedSince || now - lastPrune < PRUNE_EVERY_MS || stopped) return;
    lastPrune = now;
    prunedSince = false;
    try {
      await pruneHistory(ctx);
    } catch (err) {
      log(err, "webhook worker: pruning the history failed");
    }
  }

  const wake = (changed?: boolean) => {
    if (changed) hooksChanged++;
    soon();
  };
  setOutboxWaker(ctx, wake);
  pump();

  return {
    poke: pump,
    async idle() {
      for (;;) {
        if (pumping) await pumping;
        else if (inFlight.size) await Promise.all([...inFlight.values()].map((f) => f.done));
        else if (outcomes.length || wanted) pump();
        else return;
      }
    },
    async stop({ graceMs = 2_000 } = {}) {
      if (stopped) return;
      stopped = true;
      setOutboxWaker(ctx, null);
      if (timer) clearTimeout(timer);
      await pumping;
      let giveUp: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all([...inFlight.values()].map((f) => f.done)), new Promise((r) => (giveUp = setTimeout(r, graceMs)))]);
      clearTimeout(giveUp);
      const abandoned = [...inFlight.entries()];
      stopAll.abort();
      await Promise.all(abandoned.map(([, f]) => f.done));
      if (outcomes.length) await writeOutcomes(outcomes.splice(0)).catch((err) => log(err, "webhook worker: recording attempts failed"));
      // Due again at once, here after a restart or on another node.
      for (const [id, f] of abandoned)
        await ctx.db
          .run("UPDATE _webhook_deliveries SET next_at = ?, claim = NULL WHERE id = ? AND claim = ?", [ctx.clock.now(), id, f.claim])
          .catch((err) => log(err, "webhook worker: releasing a delivery failed"));
    },
  };
}

/** Reads at most `max` bytes of an answer's body as text, and drops the rest. */
async function readSnippet(res: Response, max: number, signal: AbortSignal): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max && !signal.aborted) {
      const { done, value } = await reader.read();
      if (done) return new TextDecoder().decode(Buffer.concat(chunks)).trim();
      chunks.push(value);
      size += value.length;
    }
    await reader.cancel().catch(() => {});
  } catch {
    return "";
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, max)).trim();
}

/** Rows one pruning statement deletes at most: each is a short write, so requests' writes go in between. */
const PRUNE_CHUNK = 1000;

/** Runs a chunked DELETE (its `LIMIT` given as the last parameter) until it deletes less than a chunk. */
async function deleteInChunks(ctx: AppContext, sql: string, params: (string | number)[]): Promise<void> {
  for (;;) {
    const { changes } = await ctx.db.run(sql, [...params, PRUNE_CHUNK]);
    if (changes < PRUNE_CHUNK) return;
    // Between chunks the event loop serves what waits (on SQLite, other writes take the lock).
    await new Promise((r) => setImmediate(r));
  }
}

/** See maybePrune. */
export async function pruneHistory(ctx: AppContext): Promise<void> {
  const now = ctx.clock.now();
  // A disabled webhook's deliveries are never claimed: past their time they are failed here.
  await ctx.db.run(
    `UPDATE _webhook_deliveries SET status = 'failed', updated_at = ? WHERE status = 'pending' AND expires_at < ? AND claim IS NULL
       AND webhook_id IN (SELECT id FROM _webhooks WHERE enabled = FALSE)`,
    [now, now],
  );
  const hooks = await ctx.db.all<{ id: string }>("SELECT id FROM _webhooks");
  for (const { id } of hooks) {
    const cut = await ctx.db.get<{ id: string }>(`SELECT id FROM _webhook_attempts WHERE webhook_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${ATTEMPTS_KEPT}`, [id]);
    if (cut)
      await deleteInChunks(ctx, "DELETE FROM _webhook_attempts WHERE id IN (SELECT id FROM _webhook_attempts WHERE webhook_id = ? AND id <= ? LIMIT ?)", [id, cut.id]);
    await deleteInChunks(
      ctx,
      `DELETE FROM _webhook_deliveries WHERE id IN (SELECT d.id FROM _webhook_deliveries d WHERE d.webhook_id = ? AND d.status <> 'pending'
         AND NOT EXISTS (SELECT 1 FROM _webhook_attempts a WHERE a.delivery_id = d.id) LIMIT ?)`,
      [id],
    );
  }
}
