/** One problem of a 422 answer: the field, the rule it broke and a message for people. */
export interface FieldError {
  field: string;
  rule: string;
  message: string;
  /** Bulk inserts: the position of the record the problem belongs to. */
  index?: number;
}

/**
 * Every failed call rejects with a BaasError. `status` and `code` come from the server's error body
 * (`{ error, code }`); a 422 has `code: "validation_failed"` and its problems in `errors`. A request that
 * got no answer has `status: 0` and `code: "network_error"`.
 */
export class BaasError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors?: FieldError[];
  /** The whole error body as the server sent it (extra members such as `index` or `op` included). */
  readonly body: unknown;
  /** Seconds to wait, from `Retry-After` on a 429. */
  readonly retryAfter?: number;

  constructor(status: number, code: string, message: string, extra: { errors?: FieldError[]; body?: unknown; retryAfter?: number; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "BaasError";
    this.status = status;
    this.code = code;
    if (extra.errors) this.errors = extra.errors;
    this.body = extra.body;
    if (extra.retryAfter !== undefined) this.retryAfter = extra.retryAfter;
  }
}

/** True for a BaasError (also one made by another copy of this package). */
export function isBaasError(err: unknown): err is BaasError {
  return err instanceof BaasError || (err instanceof Error && err.name === "BaasError" && typeof (err as BaasError).status === "number");
}

/** Builds the BaasError for a non-2xx answer from its status, headers and (maybe JSON) body. */
export function errorFromResponse(status: number, headers: Headers, text: string): BaasError {
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's page, say): keep the text
  }
  const retry = headers.get("retry-after");
  const retryAfter = retry !== null && /^\d+$/.test(retry.trim()) ? Number(retry) : undefined;
  const obj = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
  if (Array.isArray(obj.errors)) {
    const errors = obj.errors as FieldError[];
    const message = errors.map((e) => e.message).join(" ") || "validation failed";
    return new BaasError(status, "validation_failed", message, { errors, body, retryAfter });
  }
  const code = typeof obj.code === "string" ? obj.code : "http_error";
  const message = typeof obj.error === "string" ? obj.error : `HTTP ${status}`;
  return new BaasError(status, code, message, { body, retryAfter });
}
