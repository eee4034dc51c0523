import { expect, test } from "bun:test";
import { SseSink, sseFrame } from "../../src/realtime/sse.ts";

const text = (v: Uint8Array | undefined) => new TextDecoder().decode(v);

// The streams of one batch that hold the same frames share one joined write; a stream whose frames
// differ (as many, in the same order or not) must still get its own.
test("streams of one batch get exactly their own frames, joined once when they are the same", async () => {
  const a = sseFrame("create", JSON.stringify({ n: "a" }), "1");
  const b = sseFrame("create", JSON.stringify({ n: "b" }), "2");
  const c = sseFrame("update", JSON.stringify({ n: "c" }), "3");
  const queues = [[a, b], [a, b], [a, c], [b, a], [a, b], [c]];
  const sinks = queues.map(() => new SseSink(1 << 20, () => {}));
  const readers = sinks.map((s) => s.response.body!.getReader());
  const firsts = readers.map((r) => r.read());
  await new Promise((r) => setImmediate(r));
  queues.forEach((frames, i) => frames.forEach((f) => sinks[i].send(f)));
  const got = (await Promise.all(firsts)).map((r) => text(r.value));
  expect(got).toEqual(queues.map((frames) => frames.map((f) => text(f)).join("")));
  for (const s of sinks) s.end();
});
