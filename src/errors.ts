/** The one error type of the service. Services throw it; the HTTP error plugin renders it. */
export class AppError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public extra: Record<string, unknown> = {},
    public headers: Record<string, string> = {},
    opts: { cause?: unknown } = {},
  ) {
    // The cause (an underlying error) is for the log only; it never reaches the response body.
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AppError";
  }

  /** The JSON body CONTRACT §1 gives every error but 422. */
  body(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.extra };
  }
}

/** One failed field check, the element of a 422 `errors` array. */
export interface FieldError {
  field: string;
  rule: string;
  message: string;
  index?: number;
}

/**
 * The 422 a thrown value with status 422 stands for (a hook's or a route's): its `errors` when they are
 * `{ field, rule, message }` objects, else one entry with `message` under `rule`.
 */
export function thrownValidation(errors: unknown, message: string, rule: string): ValidationError {
  const listed =
    Array.isArray(errors) && errors.length > 0 && errors.every((x) => x && typeof x.field === "string" && typeof x.rule === "string" && typeof x.message === "string");
  return new ValidationError(listed ? (errors as FieldError[]).map(({ field, rule, message }) => ({ field, rule, message })) : [{ field: "", rule, message }]);
}

/** 422 with SPEC's `{ errors: [...] }` body (plus optional extra keys such as `index`). */
export class ValidationError extends AppError {
  constructor(public errors: FieldError[], extra: Record<string, unknown> = {}) {
    super(422, "validation_failed", errors.map((e) => e.message).join(" "), extra);
    this.name = "ValidationError";
  }

  override body(): Record<string, unknown> {
    return { errors: this.errors, ...this.extra };
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) =>
  new AppError(400, "bad_request", message, extra);
export const notFound = (message: string) => new AppError(404, "not_found", message);
export const forbidden = (message: string) => new AppError(403, "forbidden", message);
export const unauthorized = (message = "authentication required") =>
  new AppError(401, "unauthorized", message);
export const conflict = (message: string) => new AppError(409, "conflict", message);
/** A size as a 413 names it: whole mebibytes as such, any other size in bytes (exact either way). */
export const sizeText = (bytes: number) => (bytes >= 1048576 && bytes % 1048576 === 0 ? `${bytes / 1048576} MiB` : `${bytes} bytes`);
/** 413 `payload_too_large`: `what` (the request body, a file of a field) is larger than `max` bytes. */
export const payloadTooLarge = (max: number, what = "the request body") => new AppError(413, "payload_too_large", `${what} is larger than ${sizeText(max)}`);
/** 403 `method_disabled`: an auth method switched off in the settings. */
export const methodDisabled = (what: string) => new AppError(403, "method_disabled", `${what} is disabled on this server`);

/** Builds a 422 for one field. */
export const fieldError = (field: string, rule: string, message: string) =>
  new ValidationError([{ field, rule, message }]);

/**
 * A request body as its route's schema check left it: the typed value, or the rejection the
 * service raises (`bodyOf`) once it has checked what comes first (credentials, setting, collection).
 */
export type Checked<T> = T | AppError;

/** The checked body, or throws its rejection. */
export function bodyOf<T>(body: Checked<T>): T {
  if (body instanceof AppError) throw body;
  return body;
}
