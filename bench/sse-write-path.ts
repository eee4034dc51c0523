// CPU cost of one socket write of a response stream, by write path: `bun bench/sse-write-path.ts [rounds=300]`.
// 1,000 streams from Bun.serve in this process, read by a client process (plain TCP, on CPU 0 when
// taskset exists; run this under `taskset -c 1` to keep them apart); each round writes one 3 KB chunk
// to every stream, then yields 5 ms. Prints this process's user and kernel CPU per write for Bun's
// direct stream (write + flush, as the realtime sink does; write alone) and a default ReadableStream
// (enqueue).
const N = 1000;
if (process.argv[2] === "client") {
  const port = Number(process.argv[3]);
  let open = 0;
  const request = Buffer.from("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  for (let i = 0; i < N; i++)
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          s.write(request);
          if (++open === N) console.log("ready");
        },
        data() {},
      },
    });
  setInterval(() => {}, 1000);
} else {
  const ROUNDS = Number(process.argv[2] ?? 300);
  const chunk = Buffer.alloc(3000, 97);
  for (const mode of ["direct, write + flush", "direct, write", "default, enqueue"]) {
    const writers: ((b: Uint8Array) => void)[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch() {
        const headers = { "content-type": "text/event-stream" };
        if (mode === "default, enqueue")
          return new Response(new ReadableStream<Uint8Array>({ start: (c) => void writers.push((b) => c.enqueue(b)) }), { headers });
        const source = {
          type: "direct",
          pull(c: { write(b: Uint8Array): unknown; flush(): unknown }) {
            writers.push(mode === "direct, write" ? (b) => c.write(b) : (b) => (c.write(b), c.flush()));
            return new Promise(() => {});
          },
        };
        return new Response(new ReadableStream(source as unknown as UnderlyingDefaultSource<Uint8Array>), { headers });
      },
    });
    const pin = Bun.which("taskset") ? ["taskset", "-c", "0"] : [];
    const client = Bun.spawn([...pin, process.execPath, import.meta.path, "client", String(server.port)], { stdout: "pipe" });
    await client.stdout.getReader().read();
    while (writers.length < N) await Bun.sleep(10);
    for (const w of writers) w(chunk);
    await Bun.sleep(200);
    const t0 = process.cpuUsage();
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of writers) w(chunk);
      await Bun.sleep(5);
    }
    await Bun.sleep(100);
    const u = process.cpuUsage(t0);
    console.log(`| ${mode} | ${(u.user / (ROUNDS * N)).toFixed(2)} µs | ${(u.system / (ROUNDS * N)).toFixed(2)} µs |`);
    client.kill();
    await client.exited;
    server.stop(true);
  }
  process.exit(0);
}
