import { BaasError, errorFromResponse, isBaasError } from "./errors.js";
import type { EventSourceFactory } from "./event-source.js";
import { memoryStorage, type SessionStorage } from "./storage.js";
import type { Session, User } from "./types.js";

/** The part of `fetch` the client uses: always a URL string and an init object. */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>;

/** Options of `createClient`. */
export interface ClientOptions {
  /** Where the session (access and refresh token, user) is kept. Default: in memory. `localStorage` works as it is. */
  storage?: SessionStorage;
  /** The storage key of the session (default `baas.session`). */
  storageKey?: string;
  /** The fetch to use (default: the global one). */
  fetch?: FetchFunction;
  /** Headers sent with every request, e.g. `{ "X-API-Key": "baas_…" }`. */
  headers?: Record<string, string>;
  /** The EventSource to use for realtime (default: the global one, else one over `fetch`). */
  EventSource?: EventSourceFactory;
}

/** What the client keeps between calls. */
export interface StoredSession {
  access_token: string;
  refresh_token: string;
  user?: User;
}

export interface RequestOptions {
  query?: URLSearchParams;
  body?: unknown;
  /** false: send no access token and never refresh (login, register, …). Default true. */
  auth?: boolean;
  /** Headers of this request only (e.g. `If-Match`). */
  headers?: Record<string, string>;
}

export interface Transport {
  /** The API base, `<server>/api/v1`. */
  readonly baseUrl: string;
  request<R>(method: string, path: string, opts?: RequestOptions): Promise<R>;
  session(): Promise<StoredSession | null>;
  saveSession(session: StoredSession | null): Promise<void>;
  refresh(): Promise<Session>;
}

/** `http://host:8090`, `http://host:8090/` and `http://host:8090/api/v1` all name the same API. */
export function apiBase(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return /\/api\/v1$/.test(trimmed) ? trimmed : `${trimmed}/api/v1`;
}

/**
 * The HTTP layer: JSON in and out, errors as BaasError, the session in storage, and one refresh
 * at a time. A 401 on a call made with the access token refreshes the pair and retries once; calls
 * that get their 401 while a refresh runs wait for it instead of starting their own, because a
 * second use of the same refresh token is taken by the server as theft and revokes the session.
 */
export function createTransport(url: string, options: ClientOptions = {}): Transport {
  const baseUrl = apiBase(url);
  const storage = options.storage ?? memoryStorage();
  const key = options.storageKey ?? "baas.session";
  const doFetch: FetchFunction = options.fetch ?? ((u, init) => globalThis.fetch(u, init));
  let current: StoredSession | null | undefined; // undefined: not read from storage yet
  let loading: Promise<StoredSession | null> | null = null;
  let refreshing: Promise<Session> | null = null;

  async function session(): Promise<StoredSession | null> {
    if (current !== undefined) return current;
    loading ??= (async () => {
      const raw = await storage.getItem(key);
      // A session saved while storage was being read wins over what storage held.
      if (current === undefined) current = parseStored(raw);
      return current;
    })();
    return loading;
  }

  async function saveSession(s: StoredSession | null): Promise<void> {
    current = s ? { access_token: s.access_token, refresh_token: s.refresh_token, ...(s.user ? { user: s.user } : {}) } : null;
    if (current) await storage.setItem(key, JSON.stringify(current));
    else await storage.removeItem(key);
  }

  async function send<R>(method: string, path: string, opts: RequestOptions, token: string | null): Promise<R> {
    const query = opts.query?.toString();
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers, ...opts.headers };
    // A FormData body (files) goes as multipart/form-data, with the boundary fetch sets.
    const form = typeof FormData !== "undefined" && opts.body instanceof FormData;
    if (opts.body !== undefined && !form) headers["Content-Type"] = "application/json";
    if (token) headers.Authorization = `Bearer ${token}`;
    let res: Response;
    try {
      res = await doFetch(`${baseUrl}${path}${query ? `?${query}` : ""}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : form ? (opts.body as FormData) : JSON.stringify(opts.body),
      });
    } catch (err) {
      throw new BaasError(0, "network_error", `could not reach ${baseUrl}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const text = await res.text();
    if (!res.ok) throw errorFromResponse(res.status, res.headers, text);
    return (text ? JSON.parse(text) : undefined) as R;
  }

  function refresh(): Promise<Session> {
    refreshing ??= (async () => {
      try {
        const s = await session();
        if (!s?.refresh_token) throw new BaasError(401, "unauthorized", "not logged in");
        try {
          const fresh = await send<Session>("POST", "/auth/refresh", { body: { refresh_token: s.refresh_token } }, null);
          await saveSession(fresh);
          return fresh;
        } catch (err) {
          // The refresh token is dead (expired, revoked, logged out elsewhere): so is the session.
          if (isBaasError(err) && err.status === 401 && current?.refresh_token === s.refresh_token) await saveSession(null);
          throw err;
        }
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  }

  async function request<R>(method: string, path: string, opts: RequestOptions = {}): Promise<R> {
    if (opts.auth === false) return send<R>(method, path, opts, null);
    if (refreshing) await refreshing.catch(() => {});
    const token = (await session())?.access_token ?? null;
    try {
      return await send<R>(method, path, opts, token);
    } catch (err) {
      // A wrong password (DELETE /auth/me) is 401 invalid_credentials: the token is fine, and a retry would count another guess.
      if (!token || !isBaasError(err) || err.status !== 401 || err.code === "invalid_credentials") throw err;
      const now = await session();
      if (!now) throw err;
      try {
        // Only the first call to see this token fail refreshes; the others wait for that refresh.
        if (now.access_token === token) await refresh();
        else if (refreshing) await refreshing;
      } catch {
        throw err;
      }
      const fresh = (await session())?.access_token ?? null;
      if (!fresh || fresh === token) throw err;
      return send<R>(method, path, opts, fresh);
    }
  }

  return { baseUrl, request, session, saveSession, refresh };
}

function parseStored(raw: string | null): StoredSession | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as StoredSession;
    return v && typeof v.access_token === "string" && typeof v.refresh_token === "string" ? v : null;
  } catch {
    return null;
  }
}
