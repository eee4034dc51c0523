// The files "ceiling": a bare Bun.serve that stores a request's body with Bun.write and serves a file with
// Bun.file, nothing else (no multipart parsing, rules, sniffing or record). baas's uploads and downloads are
// measured as a ratio against it. `bun bench/files-ceiling.ts <dir>` prints "listening on http://127.0.0.1:<port>".
//
// `POST /upload-pieces` is the least a server can do with a body that it must look at in JavaScript (a
// multipart body, whose file lies between part headers and a closing boundary): each piece of the body as it
// comes written to a temporary file, which is then renamed (no parsing either). Bun.write of a whole request
// never shows the body to JavaScript, so no multipart upload can go that way.
import { mkdirSync, writeSync } from "node:fs";
import { open, rename } from "node:fs/promises";
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
    if (req.method === "POST" && url.pathname === "/upload-pieces") {
      const name = `p${++n}`;
      const tmp = join(dir, `${name}.partial`);
      const fh = await open(tmp, "w");
      let size = 0;
      try {
        for await (const piece of req.body as unknown as AsyncIterable<Uint8Array>) {
          for (let at = 0; at < piece.byteLength; ) at += writeSync(fh.fd, piece, at);
          size += piece.byteLength;
        }
      } finally {
        await fh.close();
      }
      await rename(tmp, join(dir, name));
      return Response.json({ name, size }, { status: 201 });
    }
    if (req.method === "GET" && url.pathname.startsWith("/file/")) return new Response(Bun.file(join(dir, url.pathname.slice(6))));
    return new Response("not found", { status: 404 });
  },
});
console.error(`listening on http://127.0.0.1:${server.port}`);
