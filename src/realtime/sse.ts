const encoder = new TextEncoder();
const END_GRACE_MS = 30_000;

/** One Server-Sent Events frame, encoded. `data` is one line of JSON (JSON never holds a raw newline). */
export function sseFrame(event: string, data: string, id?: string): Uint8Array {
  return encoder.encode(`${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`);
}

/**
 * The writing end of one event stream. Frames wait in a bounded queue until the connection asks
 * for more (the response stream's pull, which Bun calls only while the socket takes data), so a
 * reader that stalls fills its own queue and nothing else: `send` never blocks and never waits.
 * When the queue would pass `maxBytes`, what is queued is dropped, a final `reset` frame goes
 * out in its place and the stream ends.
 */
export class SseSink {
  readonly response: Response;
  private queue: Uint8Array[] = [];
  private queuedBytes = 0;
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  private wanted = false;
  private ending = false;
  closed = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onClose: () => void,
    headers: Record<string, string> = {},
  ) {
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.controller = c;
        },
        pull: () => {
          this.wanted = true;
          this.flush();
        },
        cancel: () => this.finish(),
      },
      { highWaterMark: 0 },
    );
    this.response = new Response(stream, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
        ...headers,
      },
    });
  }

  /**
   * Queues a frame for the client; false when the stream is closed or just overflowed (and was
   * closed). A frame sent to many streams is best encoded once: they then hold the same bytes.
   */
  send(frame: string | Uint8Array): boolean {
    if (this.closed || this.ending) return false;
    const bytes = typeof frame === "string" ? encoder.encode(frame) : frame;
    if (this.queuedBytes + bytes.byteLength > this.maxBytes) {
      this.queue = [];
      this.queuedBytes = 0;
      this.end(sseFrame("reset", JSON.stringify({ reason: "overflow" })));
      return false;
    }
    this.queue.push(bytes);
    this.queuedBytes += bytes.byteLength;
    this.flush();
    return true;
  }

  /**
   * Sends `last` (if any) after what is queued, then ends the stream. A reader that does not
   * take it within `END_GRACE_MS` has its connection cut, so a stalled client holds nothing.
   */
  end(last?: Uint8Array): void {
    if (this.closed || this.ending) return;
    if (last) {
      this.queue.push(last);
      this.queuedBytes += last.byteLength;
    }
    this.ending = true;
    this.flush();
    if (this.closed) return;
    const timer = setTimeout(() => {
      try {
        this.controller?.error(new Error("event stream closed: the client did not read"));
      } catch {}
      this.finish();
    }, END_GRACE_MS);
    timer.unref?.();
  }

  private flush(): void {
    const c = this.controller;
    if (!c || this.closed) return;
    if (this.wanted && this.queue.length) {
      // One chunk per pull keeps the pace of the socket; a burst is joined into that one chunk.
      const chunk = this.queue.length === 1 ? this.queue[0] : Buffer.concat(this.queue);
      this.queue = [];
      this.queuedBytes = 0;
      this.wanted = false;
      c.enqueue(chunk);
    }
    if (this.ending && !this.queue.length) {
      try {
        c.close();
      } catch {}
      this.finish();
    }
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.onClose();
  }
}
