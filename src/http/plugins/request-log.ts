import type { Logger } from "../../log.ts";

const ids = new WeakMap<Request, string>();

/** The id the request log gave this request (the incoming X-Request-Id when sane), for lines logged while handling it. */
export function requestIdOf(request: Request): string | undefined {
  return ids.get(request);
}

// A client may pass its own id (a proxy's, a trace's) so its lines and ours match; anything else is replaced
// rather than written to the log, so a header cannot forge log lines or flood them.
const SANE_ID = /^[A-Za-z0-9._:\/+=-]{1,128}$/;

// Query parameters whose values are credentials or one-time codes: the log shows the name, never the value.
const SECRET_PARAMS = new Set([
  "token", "access_token", "refresh_token", "id_token", "totp_token", "code", "state", "password", "secret",
  "key", "api_key", "apikey", "client_secret", "otp", "nonce", "code_verifier", "signature", "sig",
]);

/** The path and query of a URL as logged: values of secret-bearing parameters become `***`, the rest stays as sent. */
export function loggedPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const rest = start < 0 ? "/" : url.slice(start);
  const q = rest.indexOf("?");
  if (q < 0) return rest;
  const redacted = rest
    .slice(q + 1)
    .split("&")
    .map((part) => {
      const eq = part.indexOf("=");
      const raw = eq < 0 ? part : part.slice(0, eq);
      let name = raw;
      try {
        name = decodeURIComponent(raw.replace(/\+/g, " "));
      } catch {}
      return eq >= 0 && SECRET_PARAMS.has(name.toLowerCase()) ? `${raw}=***` : part;
    })
    .join("&");
  return `${rest.slice(0, q)}?${redacted}`;
}

function stamp(res: Response, id: string): Response {
  try {
    res.headers.set("x-request-id", id);
    return res;
  } catch {
    // Some responses carry immutable headers: answer a copy instead.
    const copy = new Response(res.body, res);
    copy.headers.set("x-request-id", id);
    return copy;
  }
}

function finish(log: Logger, request: Request, id: string, started: number, status: number): void {
  const line = log.request;
  if (line) {
    // The logger's own formatter: no fields object, and nothing prepared for a level that is off.
    if (line.enabled(status)) line(request.method, loggedPath(request.url), status, Math.round((performance.now() - started) * 10) / 10, id);
    return;
  }
  const fields = {
    method: request.method,
    path: loggedPath(request.url),
    status,
    duration_ms: Math.round((performance.now() - started) * 10) / 10,
    request_id: id,
  };
  if (status >= 500) log.error("request", fields);
  else log.info("request", fields);
}

function answered(log: Logger, request: Request, id: string, started: number, res: unknown): unknown {
  if (!(res instanceof Response)) return res;
  finish(log, request, id, started, res.status);
  return stamp(res, id);
}

async function settle(log: Logger, request: Request, id: string, started: number, out: Promise<unknown>): Promise<unknown> {
  let res: unknown;
  try {
    res = await out;
  } catch (err) {
    finish(log, request, id, started, 500);
    throw err;
  }
  return answered(log, request, id, started, res);
}

/**
 * Wraps the app's fetch handler: every request gets an id (X-Request-Id on the response) and, once answered,
 * one log line with method, path (secrets redacted), status, duration and id; 5xx at error level, the rest at info.
 * The wrapped handler is built once per handler, not per request (Elysia asks the wrapper on every request).
 */
export function requestLogger(log: Logger) {
  const wrapped = new WeakMap<object, (request: Request) => unknown>();
  const wrap = (fn: (request: Request) => unknown) => (request: Request) => {
    const started = performance.now();
    const incoming = request.headers.get("x-request-id");
    const id = incoming && SANE_ID.test(incoming) ? incoming : crypto.randomUUID();
    ids.set(request, id);
    let out: unknown;
    try {
      out = fn(request);
    } catch (err) {
      finish(log, request, id, started, 500);
      throw err;
    }
    return out instanceof Promise ? settle(log, request, id, started, out) : answered(log, request, id, started, out); // Bun's handler answers a Response or a promise of one (its API, not ours)
  };
  return (fn: (request: Request) => unknown) => {
    let w = wrapped.get(fn);
    if (!w) wrapped.set(fn, (w = wrap(fn)));
    return w;
  };
}
