import { waitFor } from "./wait.ts";
import { createTestApp, type TestApp } from "./app.ts";

/** One Server-Sent Event as a client sees it; `data` parsed as JSON when it is JSON. */
export interface SseMessage {
  event: string;
  data: any;
  id: string | null;
}

/**
 * Polls `check` until it returns something truthy (the shared `waitFor`): fails after `ms` without it,
 * counted from the last change of `progress` when given.
 */
export function until<T>(check: () => T | undefined | null | false, ms = 30_000, what = "condition", progress?: () => unknown): Promise<T> {
  return waitFor(check, { timeoutMs: ms, what, progress }) as Promise<T>;
}

/** A tiny SSE client over fetch: reads the stream in the background and keeps every message. */
export class SseClient {
  messages: SseMessage[] = [];
  comments: string[] = [];
  ended = false;
  endedAt = 0;
  private abort = new AbortController();

  private constructor(readonly response: Response) {}

  /** Opens a stream; a non-200 answer is returned as the client's response with nothing read. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const abort = new AbortController();
    const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
    const c = new SseClient(res);
    c.abort = abort;
    if (res.status === 200 && res.body) void c.read(res.body);
    else c.ended = true;
    return c;
  }

  private async read(body: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    // The bytes of the frame under way, as received: a frame of megabytes arrives in many chunks, and only each
    // new chunk is searched for the blank line that ends it (never the whole frame again).
    let pending: Uint8Array[] = [];
    let lastByte = -1;
    try {
      const reader = body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        let from = 0;
        for (let i = 0; i < value.length; i++) {
          if (value[i] !== 10 || (i > from ? value[i - 1] : from === 0 ? lastByte : -1) !== 10) continue;
          pending.push(value.subarray(from, i + 1));
          const text = decoder.decode(Buffer.concat(pending));
          pending = [];
          from = i + 1;
          // The frame's text without its closing blank line.
          this.parse(text.slice(0, -2));
          lastByte = -1;
        }
        if (from < value.length) {
          pending.push(value.subarray(from));
          lastByte = value[value.length - 1]!;
        }
      }
    } catch {}
    this.ended = true;
    this.endedAt = Date.now();
  }

  private parse(block: string) {
    let event = "message";
    let id: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) this.comments.push(line.slice(1).trim());
      else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return;
    const text = data.join("\n");
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    this.messages.push({ event, data: parsed, id });
  }

  /** The change events received (everything but connect/reset). */
  changes(): SseMessage[] {
    return this.messages.filter((m) => m.event !== "connect" && m.event !== "reset");
  }

  /** Waits for the first message matching `pred` (`ms` without any message arriving fails). */
  next(pred: (m: SseMessage) => boolean, ms = 30_000): Promise<SseMessage> {
    return until(() => this.messages.find(pred), ms, "an event", () => this.messages.length);
  }

  /** Waits until `n` change events arrived (`ms` without a new one fails). */
  async waitChanges(n: number, ms = 30_000): Promise<SseMessage[]> {
    await until(() => this.changes().length >= n, ms, `${n} change events`, () => this.changes().length);
    return this.changes();
  }

  /** The client_id of the connect event. */
  async clientId(): Promise<string> {
    return (await this.next((m) => m.event === "connect")).data.client_id;
  }

  close() {
    this.abort.abort();
  }
}

/** A test app listening on a free local port. */
export interface LiveApp extends TestApp {
  base: string;
  /** Opens a stream at /api/v1/realtime (plus `query`). */
  stream(opts?: { token?: string; headers?: Record<string, string>; query?: string }): Promise<SseClient>;
  /** POST /api/v1/realtime. */
  subscribe(clientId: string, subscriptions: unknown, token?: string): Promise<{ status: number; body: any }>;
  /** Stops listening and closes the app. */
  stop(): Promise<void>;
}

/** createTestApp, listening on 127.0.0.1 with an OS-chosen port. */
export function createLiveApp(opts: Parameters<typeof createTestApp>[0] = {}): LiveApp {
  const t = createTestApp(opts);
  t.app.listen({ port: 0, hostname: "127.0.0.1", idleTimeout: 30 });
  const base = `http://127.0.0.1:${t.app.server!.port}`;
  const clients: SseClient[] = [];
  const live: Omit<LiveApp, "sqlite"> = {
    ...t,
    base,
    async stream(o = {}) {
      const headers = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      const c = await SseClient.open(`${base}/api/v1/realtime${o.query ?? ""}`, headers);
      clients.push(c);
      return c;
    },
    subscribe: (clientId, subscriptions, token) => t.req("POST", "/api/v1/realtime", { body: { client_id: clientId, subscriptions }, token }),
    async stop() {
      for (const c of clients) c.close();
      await t.app.server?.stop(true);
      await t.close();
    },
  };
  return Object.defineProperty(live, "sqlite", { get: () => t.sqlite, enumerable: false }) as LiveApp;
}

/** A browser-style stream of `t`: opened bare, then bound to `token` (or anonymous) with `topics`; a refused POST throws. */
export async function followBare(t: LiveApp, topics: unknown[], token?: string): Promise<SseClient> {
  const s = await t.stream();
  const res = await t.subscribe(await s.clientId(), topics, token);
  if (res.status !== 200) throw new Error(`subscribe failed: ${res.status} ${JSON.stringify(res.body)}`);
  return s;
}

/**
 * Writes a record to `collection` (admin) and waits until every stream got it: events arrive in
 * commit order, so everything written before it arrived too. The streams must follow `collection`.
 */
export async function syncStreams(t: LiveApp, streams: SseClient[], collection = "markers"): Promise<void> {
  const m = await t.admin("POST", `/api/v1/${collection}`, { at: Date.now() });
  if (m.status !== 201) throw new Error(`marker write failed: ${m.status} ${m.text}`);
  for (const s of streams) await s.next((e) => e.data?.record?._id === m.body._id);
}
