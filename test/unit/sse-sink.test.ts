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
