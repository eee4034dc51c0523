export {};
// Subscriber side of bench/realtime.ts, run as its own process: `bun bench/realtime-subscribers.ts <spec.json>`.
// Opens `count` streams on `url`, prints "ready" once every one got its connect event, then records, for
// every change event, the delay from the record's `_created_at` (the server's commit time, same machine
// clock) to its arrival. On each line "report" on stdin it prints one JSON result line (and starts
// counting afresh); it exits when stdin closes.
//
// Each stream is a plain TCP connection speaking HTTP/1.1 (Bun.connect), read in the socket's data
// callback: every byte of every stream is read and every event is timed, without a stream reader, a
// promise and a string per read (which cost as much CPU as the server's whole fan-out, on the core
// shared with the load generator). The bytes are scanned as they come: an event is the text between
// two blank lines, so a chunk of the transfer encoding never splits one mid-way unless TCP did (then
// its start waits for the rest).

// `tokens`, when given: stream i signs in with tokens[i % tokens.length] (as a user, for rules that name @auth).
const spec = (await Bun.file(process.argv[2]).json()) as { url: string; count: number; tokens?: string[] };
const url = new URL(spec.url);
// Delays in whole milliseconds (both clocks are Date.now()): a histogram keeps every one, allocation-free.
const MAX_MS = 60_000;
let histogram = new Uint32Array(MAX_MS + 1);
let deliveries = 0;
/** Reads that brought at least one event: one server write (a batch) or more, when the reader was late. */
let reads = 0;
let connected = 0;
let failures = 0;
let resets = 0;

const CREATED = Buffer.from('"_created_at":');
const CONNECT = Buffer.from("event: connect");
const RESET = Buffer.from("event: reset");
const FRAME_END = Buffer.from("\n\n");
const requestOf = (token?: string) =>
  Buffer.from(
    `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n` +
      `${token ? `Authorization: Bearer ${token}\r\n` : ""}Connection: keep-alive\r\n\r\n`,
  );

interface State {
  /** The start of a frame TCP split, waiting for its end. */
  rest: Buffer | null;
  answered: boolean;
  connected: boolean;
}

/** Times every event of `data` (arrived at `now`); returns the bytes of a frame not complete yet. */
function scan(s: State, data: Buffer, now: number): Buffer | null {
  const last = data.lastIndexOf(FRAME_END);
  if (last < 0) return data;
  if (!s.connected) {
    const at = data.indexOf(CONNECT);
    if (at >= 0 && at < last) {
      s.connected = true;
      connected++;
    }
  }
  const before = deliveries;
  for (let at = data.indexOf(CREATED); at >= 0 && at < last; at = data.indexOf(CREATED, at + CREATED.length)) {
    let created = 0;
    for (let i = at + CREATED.length, c = data[i]; c >= 48 && c <= 57; c = data[++i]) created = created * 10 + c - 48;
    histogram[Math.min(MAX_MS, Math.max(0, now - created))]++;
    deliveries++;
  }
  if (deliveries > before) reads++;
  if (data.indexOf(RESET) >= 0) resets++;
  // Past the last blank line there is at most the end of a transfer-encoding chunk ("\r\n") or a frame's start.
  const tail = data.length - (last + FRAME_END.length);
  return tail > 2 ? Buffer.from(data.subarray(last + FRAME_END.length)) : null;
}

function subscriber(request: Buffer) {
  const s: State = { rest: null, answered: false, connected: false };
  let settled = false;
  const fail = () => {
    if (!settled && !s.connected) failures++;
    settled = true;
  };
  Bun.connect({
    hostname: url.hostname,
    port: Number(url.port || 80),
    socket: {
      open(socket) {
        socket.write(request);
      },
      data(socket, data) {
        const now = Date.now();
        if (!s.answered) {
          // The first bytes are the response's status line: anything but 200 (a 429) is a refusal.
          s.answered = true;
          if (!data.subarray(0, 12).toString("latin1").startsWith("HTTP/1.1 200")) {
            fail();
            socket.end();
            return;
          }
        }
        const bytes = s.rest ? Buffer.concat([s.rest, data]) : data;
        s.rest = scan(s, bytes, now);
      },
      close: fail,
      error: fail,
      connectError: fail,
    },
  }).catch(fail);
}

const requests = spec.tokens?.length ? spec.tokens.map(requestOf) : [requestOf()];
for (let i = 0; i < spec.count; i++) subscriber(requests[i % requests.length]!);
while (connected + failures < spec.count) await Bun.sleep(20);
console.log(JSON.stringify({ ready: true, connected, failures }));
for await (const line of console) {
  if (line.trim() !== "report") continue;
  const h = histogram;
  const n = deliveries;
  const r = reads;
  reads = 0;
  histogram = new Uint32Array(MAX_MS + 1);
  deliveries = 0;
  const pct = (p: number) => {
    if (!n) return NaN;
    const rank = Math.min(n - 1, Math.floor(p * n));
    let seen = 0;
    for (let ms = 0; ms <= MAX_MS; ms++) if ((seen += h[ms]) > rank) return ms;
    return MAX_MS;
  };
  console.log(JSON.stringify({ deliveries: n, reads: r, p50: pct(0.5), p99: pct(0.99), max: pct(1), resets, failures }));
}
process.exit(0);
