export {};
// Subscriber side of bench/realtime.ts, run as its own process: `bun bench/realtime-subscribers.ts <spec.json>`.
// Opens `count` streams on `url`, prints "ready" once every one got its connect event, then records, for
// every change event, the delay from the record's `_created_at` (the server's commit time, same machine
// clock) to its arrival. On a line "report" on stdin it prints one JSON result line and exits.

const spec = (await Bun.file(process.argv[2]).json()) as { url: string; count: number };
const delays: number[] = [];
let connected = 0;
let failures = 0;
let resets = 0;
const CREATED = /"_created_at":(\d+)/;

async function subscriber() {
  const res = await fetch(spec.url, { headers: { accept: "text/event-stream" } });
  if (res.status !== 200 || !res.body) {
    failures++;
    return;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let seenConnect = false;
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (done) break;
    const now = Date.now();
    buf += decoder.decode(value, { stream: true });
    let from = 0;
    let end: number;
    while ((end = buf.indexOf("\n\n", from)) >= 0) {
      const frame = buf.slice(from, end);
      from = end + 2;
      if (!seenConnect && frame.includes("event: connect")) {
        seenConnect = true;
        connected++;
      } else if (frame.includes("event: reset")) resets++;
      else {
        const m = CREATED.exec(frame);
        if (m) delays.push(now - Number(m[1]));
      }
    }
    buf = buf.slice(from);
  }
}

for (let i = 0; i < spec.count; i++) void subscriber();
while (connected + failures < spec.count) await Bun.sleep(20);
console.log(JSON.stringify({ ready: true, connected, failures }));
for await (const line of console) {
  if (line.trim() === "clear") delays.length = 0;
  if (line.trim() !== "report") continue;
  const sorted = Float64Array.from(delays).sort();
  const pct = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);
  console.log(JSON.stringify({ deliveries: sorted.length, p50: pct(0.5), p99: pct(0.99), max: pct(1), resets, failures }));
  process.exit(0);
}
