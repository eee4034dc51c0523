import { expect, test } from "bun:test";
import { SseSink, sseFrame } from "../../src/realtime/sse.ts";

// The fan-out awaits between streams and events (settled values: it still runs within one turn). The frames
// a stream gets in that turn must leave in one write: a write per event costs a syscall per event per
// stream, and with 1,000 streams the server falls behind the writes it fans out.
test("frames sent across awaits within one turn leave in one write", async () => {
  const sink = new SseSink(1 << 20, () => {});
  const reader = sink.response.body!.getReader();
  const first = reader.read();
  await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 5; i++) {
    sink.send(sseFrame("create", JSON.stringify({ n: i }), String(i + 1)));
    await Promise.resolve();
    await null;
  }
  const { value } = await first;
  expect(new TextDecoder().decode(value).match(/^event: create$/gm)?.length).toBe(5);
  sink.end();
});

// The buffer bounds how far a reader may fall behind, not how large one event may be: a frame larger than
// the whole buffer is queued while little waits before it; a second one behind it overflows the stream.
test("a frame larger than the buffer is taken while less than a quarter of it waits; one more large frame resets the stream", () => {
  const sink = new SseSink(1000, () => {});
  const frame = (n: number) => new Uint8Array(n).fill(120);
  expect(sink.send(frame(200))).toBe(true);
  expect(sink.send(frame(5000))).toBe(true);
  expect(sink.send(frame(5000))).toBe(false);
  expect(sink.closed || !sink.send(frame(1))).toBe(true);

  const busy = new SseSink(1000, () => {});
  expect(busy.send(frame(300))).toBe(true);
  // 300 bytes wait, more than a quarter of 1000: the large frame overflows the stream.
  expect(busy.send(frame(5000))).toBe(false);
});

// A reader whose socket is backed up when its stream overflows: the `reset` goes to the server's own buffer at
// once (Bun's stream keeps what is written while backed up and sends it before the end), not into this queue,
// where it would wait for the socket until the stream's grace gave up on it and the reader never learnt why.
test("an overflow while the socket is backed up hands the reset over at once", async () => {
  const sink = new SseSink(1000, () => {});
  const written: string[] = [];
  const controller = {
    // The first write backs the socket up (a promise that does not settle here); the server keeps what follows.
    write: (chunk: Uint8Array) => {
      written.push(new TextDecoder().decode(chunk));
      return written.length === 1 ? new Promise<number>(() => {}) : chunk.byteLength;
    },
    flush: () => 0,
    close: () => {},
  };
  (sink as unknown as { controller: typeof controller }).controller = controller;
  expect(sink.send(sseFrame("create", JSON.stringify({ n: 1 }), "1"))).toBe(true);
  await new Promise((r) => setImmediate(r));
  expect(written).toHaveLength(1);
  const big = sseFrame("create", JSON.stringify({ pad: "x".repeat(600) }), "2");
  expect(sink.send(big)).toBe(true);
  expect(sink.send(big)).toBe(false);
  expect(written).toHaveLength(2);
  expect(written[1]).toContain('event: reset\ndata: {"reason":"overflow"}');
});
