const encoder = new TextEncoder();
const END_GRACE_MS = 30_000;

/** One Server-Sent Events frame, encoded. `data` is one line of JSON (JSON never holds a raw newline). */
export function sseFrame(event: string, data: string, id?: string): Uint8Array {
  return encoder.encode(`${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`);
}

// Streams with frames queued in this turn, written by one callback after it (not one per stream).
let dirty: SseSink[] = [];
function queueFlush(sink: SseSink): void {
  if (dirty.push(sink) === 1) setImmediate(drainAll);
}
function drainAll(): void {
  const sinks = dirty;
  dirty = [];
  for (const sink of sinks) sink.drain();
  joinedFrames = null;
  joined = null;
}

// The streams of one batch mostly hold the same frames (an event goes to every stream following its
// collection, encoded once): their queues are joined once and the same bytes written to each.
let joinedFrames: Uint8Array[] | null = null;
let joined: Uint8Array | null = null;
function join(frames: Uint8Array[]): Uint8Array {
  const last = joinedFrames;
  if (last && last.length === frames.length) {
    let same = true;
    for (let i = 0; same && i < frames.length; i++) same = last[i] === frames[i];
    if (same) return joined!;
  }
  // A copy: the sink empties its queue (the same array) once written.
  joinedFrames = frames.slice();
  return (joined = Buffer.concat(frames));
}

/** Bun's direct stream controller: writes go straight to the socket; a write returns a promise while the socket is backed up. */
interface DirectController {
  write(chunk: Uint8Array): number | Promise<number>;
  flush(): number | Promise<number>;
  close(): void;
}

/**
 * The writing end of one event stream, over Bun's direct response stream (no per-chunk stream
 * machinery between the frames and the socket). While the socket is backed up (a write answered
 * with a promise), frames wait in a bounded queue of our own, so a reader that stalls fills its
 * own queue and nothing else: `send` never blocks and never waits. When the queue would pass
 * `maxBytes` (or, for a frame larger than a quarter of it, when more than that quarter waits before the
 * frame), what is queued is dropped, a final `reset` frame goes out in its place and the stream ends.
 */
export class SseSink {
  readonly response: Response;
  private queue: Uint8Array[] = [];
  private queuedBytes = 0;
  private controller: DirectController | null = null;
  private blocked = false;
  private flushQueued = false;
  private ending = false;
  private done: () => void = () => {};
  closed = false;

  /**
   * `onClose` runs once the stream is over (ended, overflowed or dropped by the client). `onEnd`
   * runs when the stream starts to end: the server arms its idle timeout there, so a reader that
   * takes nothing more has its connection cut.
   */
  constructor(
    private readonly maxBytes: number,
    private readonly onClose: () => void,
    private readonly onEnd: () => void = () => {},
    /** The `id:` of the overflow `reset` frame (every event carries one): where a client that reloaded stands. */
    private readonly resetId: () => string | undefined = () => undefined,
  ) {
    const source = {
      type: "direct",
      pull: (c: DirectController) => {
        this.controller = c;
        this.flush();
        // The response lasts until this settles.
        return new Promise<void>((resolve) => {
          this.done = resolve;
          if (this.closed) resolve();
        });
      },
      cancel: () => this.finish(),
    };
    this.response = new Response(new ReadableStream(source as unknown as UnderlyingDefaultSource<Uint8Array>), {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
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
    // The limit is for a reader that falls behind, not for one large event: a frame larger than a quarter of
    // the buffer (a record of megabytes) is taken while less than that quarter waits before it.
    const limit = Math.max(this.maxBytes, (this.maxBytes >> 2) + bytes.byteLength);
    if (this.queuedBytes + bytes.byteLength > limit) {
      this.queue = [];
      this.queuedBytes = 0;
      this.end(sseFrame("reset", JSON.stringify({ reason: "overflow" }), this.resetId()));
      return false;
    }
    this.queue.push(bytes);
    this.queuedBytes += bytes.byteLength;
    // Frames sent in the same turn (a burst of events) leave in one write, after it. A macrotask, not a
    // microtask: the fan-out awaits between streams and events (already settled values, so it still
    // runs within one turn), and a microtask would write once per event instead of once per batch.
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueFlush(this);
    }
    return true;
  }

  /** Writes what was queued in the turn that ended (see queueFlush). */
  drain(): void {
    this.flushQueued = false;
    this.flush();
  }

  /**
   * Sends `last` (if any) after what is queued, then ends the stream. A reader that does not
   * take it within `END_GRACE_MS` is given up on, and `onEnd` has armed the cut of its connection.
   */
  end(last?: Uint8Array): void {
    if (this.closed || this.ending) return;
    if (last) {
      this.queue.push(last);
      this.queuedBytes += last.byteLength;
    }
    this.ending = true;
    this.onEnd();
    // A backed-up socket: the last frames go to the server's own buffer now, behind what it holds, so the reader
    // gets them (an overflow's `reset`) before the stream's end whenever it reads again; left in this queue they
    // would wait for the socket until the grace below gave up on them.
    if (this.blocked) this.handOver();
    this.flush();
    if (this.closed) return;
    const timer = setTimeout(() => this.finish(), END_GRACE_MS);
    timer.unref?.();
  }

  /** Writes what is queued although the socket is backed up (Bun's stream keeps it), for `end`. */
  private handOver(): void {
    const c = this.controller;
    if (!c || !this.queue.length) return;
    const wrote = this.writeQueued(c);
    if (wrote instanceof Promise) wrote.catch(() => this.finish());
  }

  /** Writes the queue in one chunk and empties it: what the controller answered, or null when it threw (the stream is over). */
  private writeQueued(c: DirectController): number | Promise<number> | null {
    const chunk = this.queue.length === 1 ? this.queue[0]! : join(this.queue);
    // Emptied in place: a new array per write was garbage at every delivery.
    this.queue.length = 0;
    this.queuedBytes = 0;
    try {
      const wrote = c.write(chunk);
      c.flush();
      return wrote;
    } catch {
      this.finish();
      return null;
    }
  }

  private flush(): void {
    const c = this.controller;
    if (!c || this.closed || this.blocked) return;
    if (this.queue.length) {
      const wrote = this.writeQueued(c);
      if (wrote === null) return;
      if (wrote instanceof Promise) { // Bun's stream controller answers a promise only when the socket is backed up
        this.blocked = true;
        wrote.then(
          () => {
            this.blocked = false;
            this.flush();
          },
          () => this.finish(),
        );
        return;
      }
    }
    if (this.ending && !this.queue.length) this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.queuedBytes = 0;
    try {
      this.controller?.close();
    } catch {}
    this.done();
    this.onClose();
  }
}
