import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { checkIdempotencyKey, runIdempotent, type Caller } from "../idempotency/store.ts";
import { clientInfo } from "./request.ts";

/** The header a replayed answer carries. */
export const REPLAYED_HEADER = "idempotent-replayed";

/** Who a key belongs to: a user (whatever credential it came with), the admin, or an anonymous caller's address. */
function callerOf(ctx: AppContext, request: Request, p: Principal | null): Caller {
  if (p?.kind === "user") return `user:${p.userId}`;
  if (p?.kind === "admin") return "admin";
  return `address:${clientInfo(ctx, request).ip ?? "unknown"}`;
}

/**
 * Runs a POST's `work` under its `Idempotency-Key`, if it has one (else simply runs it): the first answer
 * (`status`, the value returned) is kept 24 h, and a retry with the same key from the same caller gets it again,
 * marked `Idempotent-Replayed: true`, without the work being done twice (see idempotency/store.ts). `body` is the
 * request's body as read: the same key with another body, method or path is 422.
 */
export function idempotent<T>(
  ctx: AppContext,
  c: { request: Request; set: { status?: number | string; headers: Record<string, string | number> } },
  p: Principal | null,
  body: unknown,
  opts: { status: number; transaction: boolean },
  work: () => Promise<T>,
): Promise<T | unknown> {
  const key = c.request.headers.get("idempotency-key");
  // Without the header the request goes as it always did: no statement, no await of its own (creates are benchmarked).
  if (key === null) {
    c.set.status = opts.status;
    return work();
  }
  return replayOrRun(ctx, c, p, body, key, opts, work);
}

async function replayOrRun<T>(
  ctx: AppContext,
  c: { request: Request; set: { status?: number | string; headers: Record<string, string | number> } },
  p: Principal | null,
  body: unknown,
  key: string,
  opts: { status: number; transaction: boolean },
  work: () => Promise<T>,
): Promise<T | unknown> {
  checkIdempotencyKey(key);
  const url = new URL(c.request.url);
  const done = await runIdempotent(
    ctx,
    { key, caller: callerOf(ctx, c.request, p), request: `${c.request.method} ${url.pathname}\n${JSON.stringify(body ?? null)}` },
    opts,
    work,
  );
  if (!done.replayed) {
    c.set.status = opts.status;
    return done.value;
  }
  c.set.status = done.answer.status;
  c.set.headers[REPLAYED_HEADER] = "true";
  return done.answer.body;
}
