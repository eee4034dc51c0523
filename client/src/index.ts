import { createAuth, type AuthApi } from "./auth.js";
import { createCollectionApi, type CollectionApi } from "./collection.js";
import { fetchEventSource, type EventSourceFactory } from "./event-source.js";
import { createRealtime, type RealtimeApi } from "./realtime.js";
import { createTransport, type ClientOptions, type RequestOptions } from "./transport.js";
import type { BaasRecord } from "./types.js";

export { BaasError, isBaasError, type FieldError } from "./errors.js";
export { memoryStorage, type SessionStorage } from "./storage.js";
export type { AuthApi } from "./auth.js";
export type { CollectionApi, FileOptions, WriteOptions } from "./collection.js";
export { fetchEventSource, type EventSourceFactory, type EventSourceLike, type SseEvent } from "./event-source.js";
export type { RealtimeAction, RealtimeApi, RealtimeEvent, Topic, Unsubscribe } from "./realtime.js";
export type { ClientOptions, FetchFunction, RequestOptions, StoredSession } from "./transport.js";
export type * from "./types.js";

/** A client of one baas server. */
export interface BaasClient {
  /** The API base, `<server>/api/v1`. */
  readonly url: string;
  readonly auth: AuthApi;
  /** The data API of a collection; `T` types its records (see `baas types`). */
  collection<T extends object = BaasRecord>(name: string): CollectionApi<T>;
  /** Live changes over Server-Sent Events: `realtime.subscribe("posts", (e) => …)`. */
  readonly realtime: RealtimeApi;
  /** Shorthand for `realtime.subscribe`. */
  subscribe: RealtimeApi["subscribe"];
  /** A file token (valid 2 minutes) for `fileUrl(…, { token })`: lets `<img src>` pass a read rule that needs a user. */
  fileToken(): Promise<string>;
  /**
   * Calls a route of the server's hook files, `/api/v1/fn/<path>`: `fn("POST", "orders/o1/pay", { body })`.
   * Answers the route's JSON (undefined for an empty answer); a failure rejects with a BaasError as any call.
   */
  fn<R = unknown>(method: string, path: string, opts?: { body?: unknown; query?: URLSearchParams | Record<string, string> }): Promise<R>;
  /** Any other call of the API, with the session's token and automatic refresh: `request("GET", "/auth/api-keys")`. */
  request<R = unknown>(method: string, path: string, opts?: RequestOptions): Promise<R>;
}

/**
 * Creates a client for the server at `url` (e.g. `http://localhost:8090`). Uses only `fetch`, so it
 * runs in browsers, Bun, Deno and Node 20+.
 */
export function createClient(url: string, options: ClientOptions = {}): BaasClient {
  const t = createTransport(url, options);
  // Browsers have EventSource; Node 20 and Bun get the same protocol over fetch.
  const native = (globalThis as { EventSource?: EventSourceFactory }).EventSource;
  const realtime = createRealtime(t, options.EventSource ?? native ?? fetchEventSource(options.fetch ?? ((u, init) => globalThis.fetch(u, init))));
  return {
    url: t.baseUrl,
    auth: createAuth(t),
    collection: <T extends object = BaasRecord>(name: string) => createCollectionApi<T>(t, name),
    realtime,
    subscribe: (topic, handler) => realtime.subscribe(topic, handler),
    fn: (method, path, opts = {}) =>
      t.request(method, `/fn/${path.replace(/^\/+/, "")}`, {
        body: opts.body,
        query: opts.query === undefined || opts.query instanceof URLSearchParams ? opts.query : new URLSearchParams(opts.query),
      }),
    request: (method, path, opts) => t.request(method, path, opts),
    fileToken: async () => (await t.request<{ token: string }>("POST", "/files/token")).token,
  };
}
