import { noteRequest } from "../catalog/catalog.ts";
import type { AppContext } from "../context.ts";
import { anonymousRecordAnswer, keptAnonymousAnswer } from "../records/read.ts";
import type { RecordAnswer } from "../records/read-cache.ts";

/** The CORS settings of the app (`@elysiajs/cors`), shared with the read path below that answers without it. */
export function corsOptions(origins: string[] | "*") {
  return {
    origin: origins === "*" ? true : origins,
    methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    allowedHeaders: ["Content-Type", "Authorization", "X-Admin-Token", "X-API-Key", "X-Request-Id", "If-Match", "If-None-Match", "Idempotency-Key", "Last-Event-ID"],
    exposeHeaders: ["Retry-After", "WWW-Authenticate", "X-Request-Id", "ETag"],
    credentials: origins !== "*",
    maxAge: 600,
  };
}

type Handler = (request: Request) => unknown;

// A path segment that needs no decoding and reads the same to Elysia's router and to us.
const SEGMENT = /^[A-Za-z0-9_-]+$/;
const PREFIX = "/api/v1/";

/**
 * The anonymous `GET /api/v1/:collection/:id` without a query string, answered without Elysia's request
 * lifecycle (its context object, router, CORS hook, response mapping): the most frequent public read costs
 * several microseconds less. IMPORTANT: it answers only what Elysia would answer identically, the same
 * record (`anonymousRecordAnswer`: what `getRecord` answers the route's anonymous caller, kept between reads
 * of a `public` collection) with the same headers (those of
 * `@elysiajs/cors` for any origin, `Response.json`'s content type); everything else, and every read that
 * fails (404, 401, 403, a bad id), goes through the app as before. Those are reads without credentials,
 * so running one a second time changes nothing. With `corsOrigins` set to a list, it never applies.
 *
 * `routes` gives the app's routes: a path another GET route could take (`/admin/users`, `/:collection/count`)
 * is never answered here.
 */
export function fastRecordReads(ctx: AppContext, routes: () => { method: string; path: string }[]): (fn: Handler) => Handler {
  const cors = corsOptions(ctx.config.corsOrigins);
  const wrapped = new WeakMap<Handler, Handler>();
  let firsts: Set<string> | null = null;
  let seconds: Set<string> | null = null;
  /** First and second segments that some other GET route of two segments under /api/v1 names literally. */
  const learnRoutes = () => {
    firsts = new Set();
    seconds = new Set();
    for (const r of routes()) {
      if (r.method !== "GET" && r.method !== "ALL") continue;
      const m = /^\/api\/v1\/([^/]+)\/([^/]+)$/.exec(r.path);
      if (!m) continue;
      if (!m[1]!.startsWith(":")) firsts.add(m[1]!);
      if (!m[2]!.startsWith(":")) seconds.add(m[2]!);
    }
  };
  const allowHeaders = cors.allowedHeaders.join(", ");
  const exposeHeaders = cors.exposeHeaders.join(", ");
  const allowMethods = cors.methods.join(", ");

  const respond = (record: RecordAnswer, origin: string | null): Response => {
    // The Response copies the headers it is given; the ETag goes on its own copy (one copy, not two).
    const res = new Response(record.body, { headers: origin ? headersFor(origin) : anyOrigin });
    res.headers.set("etag", record.etag);
    return res;
  };
  const answer = async (fn: Handler, request: Request, collection: string, id: string, origin: string | null): Promise<unknown> => {
    let record: RecordAnswer;
    try {
      record = await anonymousRecordAnswer(ctx, collection, id);
    } catch {
      return fn(request);
    }
    return respond(record, origin);
  };
  // As `@elysiajs/cors` sets them for any origin (its defaults first, then its request hook's), then the type
  // Response.json gives. Built once: a Response copies the Headers it is given (cheaper than from an object).
  const headersFor = (origin: string) =>
    new Headers({
      "access-control-expose-headers": exposeHeaders,
      "access-control-allow-headers": allowHeaders,
      vary: "*",
      "access-control-allow-origin": origin,
      "access-control-allow-methods": allowMethods,
      "content-type": "application/json;charset=utf-8",
    });
  const anyOrigin = headersFor("*");

  const wrap = (fn: Handler): Handler => (request) => {
    // Every request, answered here or not: its lookups share the catalog check of its event-loop turn.
    noteRequest(ctx.catalog);
    if (cors.origin !== true || request.method !== "GET") return fn(request);
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    if (start < 0 || !url.startsWith(PREFIX, start)) return fn(request);
    const slash = url.indexOf("/", start + PREFIX.length);
    if (slash < 0) return fn(request);
    const collection = url.slice(start + PREFIX.length, slash);
    const id = url.slice(slash + 1);
    if (!SEGMENT.test(collection) || !SEGMENT.test(id)) return fn(request);
    const h = request.headers;
    if (h.get("authorization") !== null || h.get("x-admin-token") !== null || h.get("x-api-key") !== null) return fn(request);
    // A conditional read (304) is the route's to answer.
    if (h.get("if-none-match") !== null) return fn(request);
    if (!firsts) learnRoutes();
    if (firsts!.has(collection) || seconds!.has(id)) return fn(request);
    // A kept answer goes out in this turn, without a promise; the rest is read first.
    const kept = keptAnonymousAnswer(ctx, collection, id);
    return kept ? respond(kept, h.get("origin")) : answer(fn, request, collection, id, h.get("origin"));
  };

  return (fn) => {
    let w = wrapped.get(fn);
    if (!w) wrapped.set(fn, (w = wrap(fn)));
    return w;
  };
}
