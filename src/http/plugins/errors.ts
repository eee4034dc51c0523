import { AppError, badRequest } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { requestIdOf } from "./request-log.ts";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

/** Renders an AppError as CONTRACT §1's response (401s carry WWW-Authenticate). */
export function errorResponse(err: AppError): Response {
  const headers = new Headers(JSON_HEADERS);
  for (const k in err.headers) headers.set(k, err.headers[k]!);
  if (err.status === 401) headers.set("www-authenticate", "Bearer");
  return new Response(JSON.stringify(err.body()), { status: err.status, headers });
}

function whereOf(request?: Request) {
  return {
    method: request?.method,
    path: request ? new URL(request.url).pathname : undefined,
    request_id: request ? requestIdOf(request) : undefined,
  };
}

/** Where a failed Elysia schema was attached, as CONTRACT's messages name it. */
const PART: Record<string, string> = { body: "the request body", query: "the query string", params: "the path", headers: "a header", cookie: "a cookie" };

/**
 * 400 `bad_request` for a value that failed a route's Elysia schema, naming the part and the first
 * failing property (Elysia reads a body that is no object as `{}`, so its first missing property is named).
 */
function schemaError(error: unknown): AppError {
  const e = error as { type?: string; all?: { path?: string; message?: string }[] };
  const part = PART[e.type ?? ""] ?? "the request";
  let first: { path?: string; message?: string } | undefined;
  try {
    first = e.all?.[0];
  } catch {}
  const message = first?.message?.replace(/^Expected/, "must be") ?? "is invalid";
  return badRequest(first?.path ? `${part}: "${first.path.slice(1).replaceAll("/", ".")}" ${message}` : `${part} ${message}`);
}

/** The error answer Elysia's own failures get (unknown route, unreadable body, failed schema, bad cookie). */
function frameworkError(code: string | number, error: unknown): AppError | null {
  if (code === "NOT_FOUND") return new AppError(404, "not_found", "no such endpoint");
  if (code === "PARSE") return new AppError(400, "invalid_json", "malformed JSON body");
  if (code === "VALIDATION") return schemaError(error);
  if (code === "INVALID_COOKIE_SIGNATURE") return new AppError(400, "bad_request", "invalid cookie");
  return null;
}

/**
 * Turns anything thrown into a response: AppErrors as themselves, the rest as a 500 without details. The log
 * gets the cause of every 5xx at error level (stack included when unforeseen) and, at debug level, why a 4xx was answered.
 */
export function toErrorResponse(error: unknown, code: string | number, log: Logger, request?: Request): Response {
  // The engines map their own errors (db/sqlite-errors.ts, db/postgres-errors.ts) before they leave src/db.
  const mapped = frameworkError(code, error) ?? error;
  if (!(mapped instanceof AppError)) {
    log.error("unhandled error", { ...whereOf(request), error: describe(error) });
    return errorResponse(new AppError(500, "internal", "internal error"));
  }
  // A 5xx the code foresaw (busy or full database, a hook's own status) still gets its cause in the log.
  if (mapped.status >= 500)
    log.error("server error", { ...whereOf(request), status: mapped.status, code: mapped.code, error: (error as Error).message, cause: mapped.cause === undefined ? undefined : describe(mapped.cause) });
  else log.debug("request refused", { ...whereOf(request), status: mapped.status, code: mapped.code, error: mapped.message });
  return errorResponse(mapped);
}

function describe(error: unknown): unknown {
  if (!(error instanceof Error)) return String(error);
  // The statement a database error came from (its text only: values are never logged).
  const statement = (error as { statement?: unknown }).statement;
  return { message: error.message, stack: error.stack, ...(typeof statement === "string" ? { statement } : {}) };
}
