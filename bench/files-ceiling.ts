// The files "ceiling": a bare Bun.serve that stores a request's body with Bun.write and serves a file with
// Bun.file, nothing else (no multipart parsing, rules, sniffing or record). baas's uploads and downloads are
// measured as a ratio against it. `bun bench/files-ceiling.ts <dir>` prints "listening on http://127.0.0.1:<port>".
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2]!;
mkdirSync(dir, { recursive: true });
let n = 0;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  maxRequestBodySize: 1 << 30,
  async fetch(req) {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/upload") {
      const name = `f${++n}`;
      const size = await Bun.write(join(dir, name), req);
      return Response.json({ name, size }, { status: 201 });
    }
    if (req.method === "GET" && url.pathname.startsWith("/file/")) return new Response(Bun.file(join(dir, url.pathname.slice(6))));
    return new Response("not found", { status: 404 });
  },
});
console.error(`listening on http://127.0.0.1:${server.port}`);
