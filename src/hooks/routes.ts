import type { Tx } from "./types.ts";

// Routes from hook files (CONTRACT §15): `export const routes = [{ method, path, handler }]`, served under
// /api/v1/fn/<path>. Checked when the file loads; matched per request against what is loaded then.

/** The methods a route may answer. */
export const ROUTE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

/** Who calls a route: null for an anonymous caller. */
export type RouteAuth = {
  kind: "user" | "admin";
  /** The user's id (null for an admin). */
  id: string | null;
  email: string | null;
  /** The user's roles as they are now (not as the token was issued). */
  roles: string[];
  verified: boolean;
  /** True when the request carried an API key, not an access token. */
  api_key: boolean;
} | null;

/** What a route handler receives. */
export interface RouteRequest {
  request: Request;
  auth: RouteAuth;
  /** The path's `:name` segments, decoded. */
  params: Record<string, string>;
  /** The query string; a repeated key keeps its last value (`request.url` has them all). */
  query: Record<string, string>;
  /** The body parsed as JSON when it is JSON (by Content-Type, or by its first character when none is sent), else undefined. */
  body: unknown;
  /** The body's exact bytes as text (UTF-8), for signature checks; "" without a body. */
  rawBody: string;
  /** The handle on the transaction the handler runs in. */
  tx: Tx;
}

export interface FnRoute {
  method: RouteMethod;
  /** As written, e.g. `/orders/:id/pay` (leading slash optional). */
  path: string;
  handler: (r: RouteRequest) => unknown;
  /** The hook file it comes from. */
  file?: string;
  /** The path's segments: a literal, or `{ param }`. */
  segments: (string | { param: string })[];
}

const LITERAL = /^[A-Za-z0-9._~-]+$/;
const PARAM = /^:([A-Za-z_][A-Za-z0-9_]{0,63})$/;

/** Checks a file's `routes` export; returns its routes or throws `fail(message)`. */
export function checkRoutes(value: unknown, file: string, fail: (message: string) => Error): FnRoute[] {
  const where = `hook file ${file}`;
  if (!Array.isArray(value)) throw fail(`${where}: "routes" must be an array of { method, path, handler }`);
  return value.map((r, i) => {
    const at = `${where}: routes[${i}]`;
    if (!r || typeof r !== "object" || Array.isArray(r)) throw fail(`${at} must be { method, path, handler }`);
    const { method, path, handler, ...rest } = r as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw fail(`${at}: unknown key "${extra}" (expected method, path, handler)`);
    const m = typeof method === "string" ? method.toUpperCase() : "";
    if (!(ROUTE_METHODS as readonly string[]).includes(m)) throw fail(`${at}: method must be one of ${ROUTE_METHODS.join(", ")}`);
    if (typeof handler !== "function") throw fail(`${at}: handler must be a function`);
    if (typeof path !== "string") throw fail(`${at}: path must be a string such as "/orders/:id"`);
    const parts = path.replace(/^\//, "").replace(/\/$/, "").split("/");
    const seen = new Set<string>();
    const segments = parts.map((seg) => {
      const p = PARAM.exec(seg);
      if (p) {
        if (seen.has(p[1]!)) throw fail(`${at}: path "${path}" names the parameter "${p[1]}" twice`);
        seen.add(p[1]!);
        return { param: p[1]! };
      }
      if (!LITERAL.test(seg))
        throw fail(`${at}: path "${path}": each segment must be letters, digits, . _ ~ - or a :name parameter`);
      return seg;
    });
    return { method: m as RouteMethod, path, handler: handler as FnRoute["handler"], file, segments };
  });
}

/** A route's shape: two routes of one method and shape would answer the same requests. */
const shapeOf = (r: FnRoute) => `${r.method} /${r.segments.map((s) => (typeof s === "string" ? s : ":")).join("/")}`;

/** Why `routes` cannot join `accepted`: the first route of theirs that answers the same requests as one already there (or as another of theirs), or null. */
export function routeConflict(accepted: readonly FnRoute[], routes: readonly FnRoute[]): string | null {
  const seen = new Map<string, FnRoute>(accepted.map((r) => [shapeOf(r), r]));
  for (const r of routes) {
    const key = shapeOf(r);
    const other = seen.get(key);
    if (other)
      return `routes conflict: ${r.method} ${r.path} of hook file ${r.file} and ${other.method} ${other.path} of hook file ${other.file} answer the same requests`;
    seen.set(key, r);
  }
  return null;
}

/** Throws `fail(message)` naming both files when two routes answer the same method and path. */
export function checkRouteConflicts(routes: readonly FnRoute[], fail: (message: string) => Error): void {
  const conflict = routeConflict([], routes);
  if (conflict) throw fail(conflict);
}

/** What a request path under /api/v1/fn/ finds: the route and its parameters, or which methods the path has. */
export type RouteMatch = { route: FnRoute; params: Record<string, string> } | { route: null; allowed: RouteMethod[] };

/**
 * The route for a method and a path below /api/v1/fn/ (segments already decoded). A literal segment matches
 * itself exactly (letter case included); `:name` one non-empty segment. Where several routes match, the one
 * whose first differing segment is literal wins: `/orders/stats` before `/orders/:id`.
 */
export function matchRoute(routes: readonly FnRoute[], method: string, segments: readonly string[]): RouteMatch {
  let best: { route: FnRoute; params: Record<string, string> } | null = null;
  const allowed = new Set<RouteMethod>();
  for (const r of routes) {
    if (r.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length && ok; i++) {
      const s = r.segments[i]!;
      if (typeof s === "string") ok = s === segments[i];
      else if (segments[i] === "") ok = false;
      else params[s.param] = segments[i]!;
    }
    if (!ok) continue;
    allowed.add(r.method);
    if (r.method !== method) continue;
    if (!best || morePrecise(r, best.route)) best = { route: r, params };
  }
  return best ?? { route: null, allowed: [...allowed] };
}

function morePrecise(a: FnRoute, b: FnRoute): boolean {
  for (let i = 0; i < a.segments.length; i++) {
    const la = typeof a.segments[i] === "string";
    const lb = typeof b.segments[i] === "string";
    if (la !== lb) return la;
  }
  return false;
}
