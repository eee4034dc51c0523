import { expect, test } from "bun:test";
import { MultipartReader } from "../../src/files/multipart.ts";

// The streaming multipart reader gives the same parts whatever the body's chunking (a boundary split across
// chunks anywhere, bytes that look like the start of a boundary inside a file).

const B = "----b0undary";

function body(parts: { name: string; filename?: string; data: Uint8Array }[]): Uint8Array {
  const pieces: Buffer[] = [Buffer.from("preamble\r\n")];
  for (const p of parts) {
    pieces.push(Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ""}\r\n\r\n`));
    pieces.push(Buffer.from(p.data), Buffer.from("\r\n"));
  }
  pieces.push(Buffer.from(`--${B}--\r\n`));
  return Buffer.concat(pieces);
}

function chunked(bytes: Uint8Array, sizes: () => number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      const n = Math.max(1, sizes());
      c.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  });
}

async function parse(stream: ReadableStream<Uint8Array>) {
  const r = new MultipartReader(stream, B, 1 << 30);
  const out: { name: string; filename?: string; data: Buffer }[] = [];
  for (;;) {
    const p = await r.next();
    if (!p) return out;
    const chunks: Uint8Array[] = [];
    for await (const c of p.chunks()) chunks.push(new Uint8Array(c));
    out.push({ name: p.name, ...(p.filename !== undefined ? { filename: p.filename } : {}), data: Buffer.concat(chunks) });
  }
}

test("every chunking of a body gives the same parts, boundary-like bytes inside a file included", async () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const tricky = Buffer.concat([Buffer.from(`\r\n--${B.slice(0, 6)}`), Buffer.from("\r\n--"), Buffer.alloc(3000, 1), Buffer.from(`\r\n-${B}`), Buffer.from("\r")]);
  const parts = [
    { name: "title", data: Buffer.from("hello") },
    { name: "doc", filename: "a.bin", data: tricky },
    { name: "empty", filename: "e.txt", data: Buffer.alloc(0) },
    { name: "big", filename: "b.bin", data: Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) & 255)) },
  ];
  const bytes = body(parts);
  const expected = parts.map((p) => ({ name: p.name, ...(p.filename !== undefined ? { filename: p.filename } : {}), data: Buffer.from(p.data) }));
  for (const sizes of [() => 1, () => 2, () => 13, () => B.length + 3, () => 1 + Math.floor(rand() * 40), () => 1 + Math.floor(rand() * 70_000), () => 1 << 20]) {
    expect(await parse(chunked(bytes, sizes))).toEqual(expected);
  }
});

test("a body cut short, without a boundary, or over the limit is refused", async () => {
  const bytes = body([{ name: "doc", filename: "a", data: Buffer.alloc(100, 2) }]);
  await expect(parse(chunked(bytes.slice(0, 120), () => 7))).rejects.toThrow(/cut short/);
  await expect(parse(chunked(Buffer.from("no boundary here"), () => 4))).rejects.toThrow(/no boundary/);
  const r = new MultipartReader(chunked(bytes, () => 10), B, 50);
  await expect((async () => {
    const p = await r.next();
    for await (const _ of p!.chunks());
  })()).rejects.toThrow(/larger than/);
});
