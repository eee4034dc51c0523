import { Elysia } from "elysia";

const ALLOW_HEADERS = "Content-Type, Authorization, X-Admin-Token, X-API-Key, X-Request-Id";
const EXPOSE_HEADERS = "Retry-After, WWW-Authenticate, X-Request-Id";
const METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";

/**
 * CORS on every answer (docs/API.md): `origins` "*" echoes the caller's Origin (or `*`) without
 * credentials; a list allows those origins (an entry without a scheme matches any scheme) with
 * credentials, and a `*` in it allows any origin as `*`. Every header but the allowed origin is
 * fixed, so it is built once here and set as the app's default headers; a request only decides
 * its origin. A preflight (OPTIONS) is answered 204 at once.
 */
export function corsPlugin(origins: string[] | "*") {
  const echoAny = origins === "*";
  const anyOrigin = !echoAny && origins.includes("*");
  const allowed = new Set(echoAny ? [] : origins);
  const fixed: Record<string, string> = {
    "access-control-allow-headers": ALLOW_HEADERS,
    "access-control-expose-headers": EXPOSE_HEADERS,
    "access-control-allow-methods": METHODS,
    vary: echoAny || anyOrigin ? "*" : "Origin",
  };
  if (!echoAny) fixed["access-control-allow-credentials"] = "true";

  const originFor = (from: string | null): string | null => {
    if (echoAny) return from || "*";
    if (anyOrigin) return "*";
    if (!from) return null;
    if (allowed.has(from)) return from;
    const scheme = from.indexOf("://");
    return scheme >= 0 && allowed.has(from.slice(scheme + 3)) ? from : null;
  };

  return new Elysia({ name: "cors" }).headers(fixed).onRequest(({ set, request }) => {
    const origin = originFor(request.headers.get("origin"));
    if (origin !== null) set.headers["access-control-allow-origin"] = origin;
    if (request.method !== "OPTIONS") return;
    // A preflight names the method it asks for; without that question there is no method answer.
    if (!request.headers.get("access-control-request-method")) delete set.headers["access-control-allow-methods"];
    set.headers["access-control-max-age"] = "600";
    return new Response(null, { status: 204 });
  });
}
