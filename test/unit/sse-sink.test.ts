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
