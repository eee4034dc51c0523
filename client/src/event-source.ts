import type { FetchFunction } from "./transport.js";

/** A received Server-Sent Event, as `EventSource` hands it to a listener. */
export interface SseEvent {
  readonly data: string;
  readonly lastEventId: string;
}

/** The part of the browser's `EventSource` the realtime client uses. */
export interface EventSourceLike {
  addEventListener(type: string, listener: (event: SseEvent) => void): void;
  close(): void;
}

/** A constructor of `EventSourceLike`s: the browser's `EventSource` fits. */
export type EventSourceFactory = new (url: string) => EventSourceLike;

/**
 * An `EventSource` over `fetch`, for runtimes without one (Node 20, Bun): the same events, and the same
 * reconnect with `Last-Event-ID` (after the server's `retry:`, else 1 s) when the stream ends or fails.
 */
export function fetchEventSource(doFetch: FetchFunction): EventSourceFactory {
  return class FetchEventSource implements EventSourceLike {
    private listeners = new Map<string, Set<(event: SseEvent) => void>>();
    private abort: AbortController | null = null;
    private closed = false;
    private lastEventId = "";
    private retryMs = 1000;

    constructor(private readonly url: string) {
      void this.run();
    }

    addEventListener(type: string, listener: (event: SseEvent) => void): void {
      let set = this.listeners.get(type);
      if (!set) this.listeners.set(type, (set = new Set()));
      set.add(listener);
    }

    close(): void {
      this.closed = true;
      this.abort?.abort();
    }

    private async run(): Promise<void> {
      while (!this.closed) {
        this.abort = new AbortController();
        try {
          const headers: Record<string, string> = { Accept: "text/event-stream" };
          if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
          const res = await doFetch(this.url, { method: "GET", headers, signal: this.abort.signal });
          if (res.ok && res.body) await this.read(res.body);
          else this.emit("error", { data: String(res.status), lastEventId: this.lastEventId });
        } catch {
          if (!this.closed) this.emit("error", { data: "", lastEventId: this.lastEventId });
        }
        if (!this.closed) await new Promise((r) => setTimeout(r, this.retryMs));
      }
    }

    private async read(body: ReadableStream<Uint8Array>): Promise<void> {
      const reader = body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          this.dispatch(buf.slice(0, end));
          buf = buf.slice(end + 2);
        }
      }
    }

    /** One frame: `event:`, `data:` (joined by newlines), `id:` and `retry:` lines; comments ignored. */
    private dispatch(frame: string): void {
      let type = "message";
      const data: string[] = [];
      for (const line of frame.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") type = value;
        else if (field === "data") data.push(value);
        else if (field === "id") this.lastEventId = value;
        else if (field === "retry" && /^\d+$/.test(value)) this.retryMs = Number(value);
      }
      if (data.length) this.emit(type, { data: data.join("\n"), lastEventId: this.lastEventId });
    }

    private emit(type: string, event: SseEvent): void {
      for (const listener of this.listeners.get(type) ?? []) listener(event);
    }
  };
}
