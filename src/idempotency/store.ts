import { createCipheriv, createDecipheriv, createHash } from "node:crypto";
import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";
import { inTransaction } from "../transaction.ts";

/**
 * Idempotent retries (`Idempotency-Key`): a client that lost the answer to a POST sends it again with the same
 * key and gets the first answer instead of a second record. The answer is written in the same database
 * transaction as the work, so a crash leaves both or neither; every node shares the table, so a retry that
 * lands on another node is answered the same.
 */

/** How long an answer is kept for a retry. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/** The longest key taken (Stripe's bound; a UUID is 36). */
export const MAX_IDEMPOTENCY_KEY = 255;
/** How often each process drops the answers past their time, at most. */
const PRUNE_EVERY_MS = 60_000;

/** Who sent a request, as keys are kept apart: a user's id, the admin, or an anonymous caller's address. */
export type Caller = string;

/** The first answer to a key, to send again. */
export interface KeptAnswer {
  status: number;
  body: unknown;
}

/** An idempotent request: its key and caller, and what identifies the request (method, path, body). */
export interface IdempotentRequest {
  key: string;
  caller: Caller;
  /** Method, path and body as read: the same key with another request is refused (422). */
  request: string;
}

// A rolled-back claim: another request holds (or held) the key; its row is read again.
class Taken extends Error {}

const lastPrune = new WeakMap<AppContext, number>();

/** Checks a key: 1 to MAX_IDEMPOTENCY_KEY printable ASCII characters (400 otherwise). */
export function checkIdempotencyKey(key: string): void {
  if (key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY || !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(key))
    throw new AppError(400, "bad_request", `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} printable ASCII characters`);
}

const digest = (...parts: string[]) => createHash("sha256").update(parts.join("\u0000")).digest();

/** How long a claim of a call that is not one transaction holds its key while it runs (a process that died meanwhile frees it then). */
export const IDEMPOTENCY_CLAIM_MS = 5 * 60_000;

/**
 * Runs `work` once per key and caller: the first call does it and keeps its answer (`status` and the value `work`
 * returns); a call with a key already answered gets that answer back (`replayed`). With `transaction` (records:
 * create, bulk, batch) the claim, the work and the answer are one transaction, and a call that comes while the
 * first runs waits for it (the database makes its claim wait). Without (calls that hash passwords or send mail
 * and must not hold the write lock meanwhile) the claim is committed first: a call meanwhile gets 409
 * `idempotency_key_in_progress`. An error of `work` keeps nothing: a retry runs it again.
 */
export async function runIdempotent<T>(
  ctx: AppContext,
  req: IdempotentRequest,
  opts: { status: number; transaction: boolean },
  work: () => Promise<T>,
): Promise<{ replayed: false; value: T } | { replayed: true; answer: KeptAnswer }> {
  // IMPORTANT: neither the key nor the answer is stored as such: the row is found by a hash of caller and key, and
  // its answer (which may hold a session's tokens or an API key) is encrypted under a key made from both, which
  // the database never sees.
  const id = digest("id", req.caller, req.key).toString("base64url");
  const secret = digest("answer", req.caller, req.key);
  const fingerprint = digest("request", req.request).toString("base64url");
  const answer = (value: T) =>
    ctx.db.run("UPDATE _idempotency_keys SET status = ?, body = ?, expires_at = ? WHERE id = ?", [
      opts.status,
      seal(secret, JSON.stringify(value ?? null)),
      ctx.clock.now() + IDEMPOTENCY_TTL_MS,
      id,
    ]);
  for (let attempt = 0; ; attempt++) {
    const kept = await readKept(ctx, id, fingerprint, secret);
    if (kept) return { replayed: true, answer: kept };
    const now = ctx.clock.now();
    // A key whose answer (or claim) is past its time is taken again; on PostgreSQL a claim made meanwhile by
    // another transaction makes this one wait until that commits (then it takes nothing) or rolls back.
    const claim = () =>
      ctx.db.run(
        "INSERT INTO _idempotency_keys (id, fingerprint, status, body, created_at, expires_at) VALUES (?, ?, 0, NULL, ?, ?) " +
          "ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint, status = 0, body = NULL, created_at = excluded.created_at, " +
          "expires_at = excluded.expires_at WHERE _idempotency_keys.expires_at <= ?",
        [id, fingerprint, now, now + (opts.transaction ? IDEMPOTENCY_TTL_MS : IDEMPOTENCY_CLAIM_MS), now],
      );
    try {
      let value: T;
      if (opts.transaction) {
        // A transaction of the service's own (not the engine's alone): the change events the work stages go out
        // when it commits (realtime, onCommit, webhooks), as those of the same write without a key.
        value = await inTransaction(ctx, async () => {
          if ((await claim()).changes === 0) throw new Taken();
          const value = await work();
          await answer(value);
          return value;
        });
      } else {
        if ((await claim()).changes === 0) throw new Taken();
        try {
          value = await work();
        } catch (err) {
          await ctx.db.run("DELETE FROM _idempotency_keys WHERE id = ? AND status = 0", [id]).catch(() => {});
          throw err;
        }
        await answer(value);
      }
      prune(ctx, now);
      return { replayed: false, value };
    } catch (err) {
      if (!(err instanceof Taken)) throw err;
      // Taken: answered meanwhile (read above), or a claim still running (a call that is not one transaction).
      const row = await ctx.db.get<{ fingerprint: string; status: number; expires_at: number }>(
        "SELECT fingerprint, status, expires_at FROM _idempotency_keys WHERE id = ?",
        [id],
      );
      if (row && Number(row.status) === 0 && Number(row.expires_at) > ctx.clock.now()) {
        if (row.fingerprint !== fingerprint) throw reused();
        throw new AppError(409, "idempotency_key_in_progress", "a request with this Idempotency-Key is still running; try again in a moment", {}, { "retry-after": "1" });
      }
      // Bounded, should the row keep vanishing between the claim and the read.
      if (attempt >= 5) throw err;
    }
  }
}

const reused = () =>
  new AppError(422, "idempotency_key_reused", "this Idempotency-Key was used with another request (method, path or body); use a new key");

/** The kept answer of key `id`, if any and still in time; 422 when the key came with another request. */
async function readKept(ctx: AppContext, id: string, fingerprint: string, secret: Buffer): Promise<KeptAnswer | null> {
  const row = await ctx.db.get<{ fingerprint: string; status: number; body: string | null; expires_at: number }>(
    "SELECT fingerprint, status, body, expires_at FROM _idempotency_keys WHERE id = ?",
    [id],
  );
  if (!row || Number(row.expires_at) <= ctx.clock.now() || Number(row.status) === 0) return null;
  if (row.fingerprint !== fingerprint) throw reused();
  return { status: Number(row.status), body: row.body === null ? null : JSON.parse(open(secret, row.body)) };
}

/** Drops the answers past their time, once a minute at most per process, after the request (never fails it). */
function prune(ctx: AppContext, now: number): void {
  if (now - (lastPrune.get(ctx) ?? 0) < PRUNE_EVERY_MS) return;
  lastPrune.set(ctx, now);
  void ctx.db.run("DELETE FROM _idempotency_keys WHERE expires_at <= ?", [now]).catch(() => {});
}

/** AES-256-GCM: iv, tag and text, base64url, dot-separated. */
function seal(key: Buffer, text: string): string {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([c.update(text, "utf8"), c.final()]);
  return [Buffer.from(iv).toString("base64url"), c.getAuthTag().toString("base64url"), body.toString("base64url")].join(".");
}

function open(key: Buffer, sealed: string): string {
  const [iv, tag, body] = sealed.split(".");
  const d = createDecipheriv("aes-256-gcm", key, Buffer.from(iv!, "base64url"));
  d.setAuthTag(Buffer.from(tag!, "base64url"));
  return Buffer.concat([d.update(Buffer.from(body!, "base64url")), d.final()]).toString("utf8");
}
