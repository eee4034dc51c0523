import { basename } from "node:path";
import { Elysia, t } from "elysia";
import type { Principal } from "../../principal.ts";
import type { AppContext } from "../../context.ts";
import { AppError, badRequest, payloadTooLarge, thrownValidation } from "../../errors.ts";
import { matchRoute, type FnRoute, type RouteAuth } from "../../hooks/routes.ts";
import { withTx } from "../../records/tx.ts";
import { MAX_BODY_KEYS, readJson } from "../body.ts";
import { doc } from "../doc.ts";
import { errorResponse } from "../plugins/errors.ts";
import { principalOf } from "../request.ts";

const PREFIX = "/api/v1/fn/";

/**
 * The request body's bytes, at most `max` (413 past it, while streaming: a missing or lying Content-Length
 * cannot make the server buffer more).
 */
async function readRaw(request: Request, max: number): Promise<Uint8Array> {
  const tooLarge = () => payloadTooLarge(max);
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      void reader.cancel().catch(() => {});
      throw tooLarge();
    }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * The body as a handler gets it: JSON (Content-Type `…json`, or none and a body starting with `{` or `[`) parsed
 * under the API's own checks (malformed 400 `invalid_json`, nesting past 64 levels 400); a form
 * (`application/x-www-form-urlencoded`) as an object of its fields (a repeated one keeps its last value);
 * anything else undefined (the handler reads `rawBody`).
 */
async function parseBody(raw: Uint8Array, text: string, type: string, max: number): Promise<unknown> {
  if (!raw.byteLength) return undefined;
  const t = type.toLowerCase();
  if (t.startsWith("application/x-www-form-urlencoded")) return formFields(text);
  const json = t ? /[/+]json\b/.test(t) : /^\s*[[{]/.test(text);
  if (!json) return undefined;
  return await readJson(new Request("http://body/", { method: "POST", body: text }), max);
}

/** A form's fields, at most MAX_BODY_KEYS of them (400 past that, counted before any is decoded, as a JSON body's keys). */
function formFields(text: string): Record<string, string> {
  let pairs = 1;
  for (let i = text.indexOf("&"); i >= 0; i = text.indexOf("&", i + 1))
    if (++pairs > MAX_BODY_KEYS) throw badRequest(`a form body has more than ${MAX_BODY_KEYS} fields`);
  return Object.fromEntries(new URLSearchParams(text));
}

/** The caller as a handler sees it: null when anonymous; a user's address, roles and verification as stored at the request. */
function routeAuth(p: Principal): RouteAuth {
  if (p.kind === "anonymous") return null;
  if (p.kind === "admin") return { kind: "admin", id: null, email: null, roles: [], verified: true, api_key: false };
  return { kind: "user", id: p.userId, email: p.email, roles: [...p.roles], verified: p.verified, api_key: p.via === "api_key" };
}

/** The request path's segments below /api/v1/fn/, decoded (one trailing slash ignored); 400 for a bad escape. */
function pathSegments(request: Request): string[] {
  const path = new URL(request.url).pathname.slice(PREFIX.length).replace(/\/$/, "");
  return path.split("/").map((seg) => {
    try {
      return decodeURIComponent(seg);
    } catch {
      throw badRequest("the path holds a malformed %-escape");
    }
  });
}

// The codes of CONTRACT §1 for the statuses a handler may throw; others get a snake_case name of their own.
const CODES: Record<number, string> = {
  400: "bad_request",
  401: "unauthorized",
  402: "payment_required",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "request_timeout",
  409: "conflict",
  410: "gone",
  412: "precondition_failed",
  413: "payload_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  500: "internal",
  501: "not_implemented",
  502: "bad_gateway",
  503: "unavailable",
  504: "gateway_timeout",
};
const CODE_RE = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * A handler's throw that carries `status` (400..599) as the answer it asks for: `{ error: message, code }`,
 * `code` its own when it is snake_case, else the status's (400 `bad_request`, 404 `not_found`, …; `error` for one
 * without a name); 422 as `{ errors: [...] }` (its `errors` when they are `{ field, rule, message }`, else one
 * with its message). Null for any other throw.
 */
function thrownStatus(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (!err || typeof err !== "object") return null;
  const e = err as { status?: unknown; message?: unknown; code?: unknown; errors?: unknown };
  if (typeof e.status !== "number" || !Number.isInteger(e.status) || e.status < 400 || e.status > 599) return null;
  const message = typeof e.message === "string" && e.message ? e.message : (CODES[e.status] ?? "error").replaceAll("_", " ");
  if (e.status === 422) return thrownValidation(e.errors, message, "invalid");
  const code = typeof e.code === "string" && CODE_RE.test(e.code) ? e.code : (CODES[e.status] ?? "error");
  return new AppError(e.status, code, message);
}

/** What a handler returned as the answer: a Response as it is; undefined 204; any other value as JSON (200). */
function answerOf(value: unknown): Response {
  if (value instanceof Response) return value;
  if (value === undefined) return new Response(null, { status: 204 });
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("the handler returned a value that is not JSON (a function or a symbol)");
  return new Response(text, { headers: { "content-type": "application/json; charset=utf-8" } });
}

/** Runs the route a request names, in one transaction (see docs: Routes). */
async function serve(ctx: AppContext, request: Request): Promise<Response> {
  const routes = ctx.hooks.routes ?? [];
  const found = matchRoute(routes, request.method, pathSegments(request));
  if (!found.route) {
    if (!found.allowed.length) throw new AppError(404, "not_found", "no such route");
    throw new AppError(405, "method_not_allowed", `this route answers ${found.allowed.join(", ")}`, {}, { allow: found.allowed.join(", ") });
  }
  const route: FnRoute = found.route;
  const p = await principalOf(ctx, request);
  const auth = routeAuth(p);
  const max = ctx.config.maxBodyBytes;
  const raw = await readRaw(request, max);
  const rawBody = new TextDecoder().decode(raw);
  const body = await parseBody(raw, rawBody, request.headers.get("content-type") ?? "", max);
  const query = Object.fromEntries(new URL(request.url).searchParams);
  try {
    // The answer is built inside the transaction: a value that cannot be sent rolls back what the handler wrote.
    // The handler gets the request with its body still to read (the raw bytes, as sent: a payment provider's
    // signature is checked over them); the server has read the original.
    const readable = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.method === "GET" || request.method === "HEAD" ? null : (raw as Uint8Array<ArrayBuffer>),
      signal: request.signal,
    });
    return await withTx(ctx, async (tx) => answerOf(await route.handler({ request: readable, auth, params: found.params, query, body, rawBody, tx })));
  } catch (err) {
    const answer = thrownStatus(err);
    if (answer) throw answer;
    // Unforeseen: the stack goes to the log (never the request's body, which may hold secrets), the client gets 500.
    ctx.log.error("route handler failed", {
      method: route.method,
      path: route.path,
      file: route.file ? basename(route.file) : null,
      error: err instanceof Error ? { message: err.message, stack: err.stack } : String(err),
    });
    return errorResponse(new AppError(500, "internal", "internal error"));
  }
}

/**
 * `/api/v1/fn/*`: the routes of the hook files (CONTRACT §15), looked up per request among those loaded, so a
 * reload of the hook files changes them without a restart. Listed in the OpenAPI document once, generically.
 */
export function fnRoutes(ctx: AppContext) {
  const handler = ({ request }: { request: Request }) => serve(ctx, request);
  const d = (method: string) =>
    doc({
      summary: `A route of the hook files (${method})`,
      tag: "functions",
      access: "data",
      description: "Served by a `routes` export of a hook file; its answer is whatever the handler returns (JSON, or a Response of its own).",
      errors: [400, 404, 405, 413],
      // A route takes any body (JSON, form fields, or raw bytes for a signature check), or none.
      ...(method === "GET" || method === "DELETE" ? {} : { body: t.Unknown({ description: "whatever the route reads: JSON, form fields or raw bytes" }), multipart: true, optionalBody: true }),
    });
  // IMPORTANT: one and two segments are routes of their own besides `/*`: a listening server routes natively,
  // and there `/api/v1/:collection/:id` (or `/:collection/batch`, `/:collection/:id/restore`) would take
  // `/api/v1/fn/ping` before a wildcard does; a path whose first part is the literal `fn` wins over parameters.
  // Left out of the OpenAPI document, which lists `/*` once per method.
  const also = { detail: { hide: true } };
  return new Elysia({ prefix: "/api/v1/fn" })
    .get("/*", handler, d("GET"))
    .get("/:a", handler, also)
    .get("/:a/:b", handler, also)
    .post("/*", handler, d("POST"))
    .post("/:a", handler, also)
    .post("/:a/:b", handler, also)
    .put("/*", handler, d("PUT"))
    .put("/:a", handler, also)
    .put("/:a/:b", handler, also)
    .patch("/*", handler, d("PATCH"))
    .patch("/:a", handler, also)
    .patch("/:a/:b", handler, also)
    .delete("/*", handler, d("DELETE"))
    .delete("/:a", handler, also)
    .delete("/:a/:b", handler, also);
}
