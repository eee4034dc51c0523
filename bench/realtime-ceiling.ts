// The realtime "ceiling" of bench/realtime.ts (`BENCH_TARGET=ceiling`): a bare Bun.serve that sends each chat
// message to every open event stream at once, one write per stream per message, with nothing else (no database,
// rules, identities, batches, replay or back-pressure). It speaks just enough of baas's protocol for the bench:
// `GET /api/v1/realtime` opens a stream (its first event `connect`), `POST /api/v1/chat` stamps the message with
// `_created_at` and fans it out before it answers. Prints "listening on http://127.0.0.1:<port>" on stderr.
interface Direct {
  write(chunk: Uint8Array | string): number | Promise<number>;
  flush(): number | Promise<number>;
}

const encoder = new TextEncoder();
const streams = new Set<Direct>();
let n = 0;

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url);
    if (req.method === "GET" && url.pathname === "/api/v1/realtime") {
      let mine: Direct | null = null;
      const body = new ReadableStream({
        type: "direct",
        pull(c: Direct) {
          mine = c;
          streams.add(c);
          c.write("event: connect\ndata: {}\n\n");
          c.flush();
          // Open until the client goes.
          return new Promise<void>(() => {});
        },
        cancel() {
          if (mine) streams.delete(mine);
        },
      } as unknown as UnderlyingDefaultSource<Uint8Array>);
      return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
    }
    if (req.method === "POST" && url.pathname === "/api/v1/chat") {
      const data = (await req.json()) as { text?: string; room?: string };
      const record = { _id: `m${++n}`, text: String(data.text ?? ""), room: String(data.room ?? ""), _created_at: Date.now() };
      const frame = encoder.encode(`id: ${n}\nevent: create\ndata: ${JSON.stringify({ collection: "chat", action: "create", record })}\n\n`);
      for (const c of streams) {
        c.write(frame);
        c.flush();
      }
      return Response.json(record, { status: 201 });
    }
    return new Response("not found", { status: 404 });
  },
});
console.error(`listening on http://127.0.0.1:${server.port}`);
