import { badRequest, payloadTooLarge } from "../errors.ts";

// A streaming reader of multipart/form-data bodies (RFC 7578). Bun's `request.formData()` reads the whole body
// into memory before it answers, which a 1 GiB upload cannot afford, and the streaming parsers on npm either
// buffer each part too or need Node streams; this one reads the body as it arrives and hands each part's
// content on piece by piece, keeping in memory only what has not been passed on (less than a boundary's length
// between pieces). The caller pulls: a part's content is read only as fast as the storage writes it.

/** Largest header block of one part. */
const MAX_HEADER_BYTES = 16 * 1024;
/** Most parts one body may have. */
const MAX_PARTS = 1000;

export interface Part {
  /** The form field's name. */
  name: string;
  /** The file name sent, for a file part (undefined for a plain field). */
  filename?: string;
  /** The Content-Type the client sent (never trusted for safety: see sniff.ts). */
  type: string;
  /** The part's content, piece by piece; must be read to its end (or the reader cancelled) before the next part. */
  chunks(): AsyncIterable<Uint8Array>;
  /** The whole content as text, refused past `max` bytes (422 for a plain field that large). */
  text(max: number): Promise<string>;
}

const enc = new TextEncoder();

/** The boundary of a multipart/form-data Content-Type, or null when the type is not one. */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2])! : null;
}

export const tooLarge = (max: number) => payloadTooLarge(max);

const malformed = (why: string) => badRequest(`malformed multipart body: ${why}`);

/**
 * Reads the parts of a multipart body one after the other, refusing more than `maxBytes` in all (413; the
 * rest of the body is not read). `cancel()` stops reading (a refused part).
 */
export class MultipartReader {
  private buf: Uint8Array = new Uint8Array(0);
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly delimiter: Uint8Array;
  private total = 0;
  private ended = false;
  private parts = 0;
  /** True once the closing delimiter was read. */
  done = false;
  /** True while a part's content has not been read to its end. */
  private open = false;

  constructor(body: ReadableStream<Uint8Array>, boundary: string, private readonly maxBytes: number) {
    this.reader = body.getReader();
    // Every delimiter but the first follows a line break; the body is read as if one came before it.
    this.delimiter = enc.encode(`\r\n--${boundary}`);
    this.buf = enc.encode("\r\n");
  }

  /** Stops reading the body. */
  cancel(): void {
    this.ended = true;
    void this.reader.cancel().catch(() => {});
  }

  /** The next chunk of the body (counted against the limit), or null at its end. */
  private async chunk(): Promise<Uint8Array | null> {
    if (this.ended) return null;
    const { done, value } = await this.reader.read();
    if (done) {
      this.ended = true;
      return null;
    }
    this.total += value.byteLength;
    if (this.total > this.maxBytes) {
      this.cancel();
      throw tooLarge(this.maxBytes);
    }
    return value;
  }

  /** Reads more of the body into the buffer; false at its end. */
  private async fill(): Promise<boolean> {
    const value = await this.chunk();
    if (!value) return false;
    this.buf = this.buf.length ? Buffer.concat([this.buf, value]) : value;
    return true;
  }

  /** The next part (its headers read), or null after the last one. */
  async next(): Promise<Part | null> {
    if (this.open) throw new Error("the previous part was not read to its end");
    if (this.done) return null;
    if (this.parts === 0) {
      // The preamble, up to the first delimiter, is skipped. The body usually begins with that delimiter: then
      // its first chunk is taken as it is, not joined to the line break read before it (a copy of what may be
      // the whole file).
      const first = await this.chunk();
      const opening = this.delimiter.subarray(2);
      let found = false;
      if (first && first.length >= opening.length && Buffer.from(first.buffer, first.byteOffset, opening.length).equals(opening)) {
        this.buf = first.subarray(opening.length);
        found = true;
      } else if (first) this.buf = Buffer.concat([this.buf, first]);
      while (!found) {
        const i = Buffer.from(this.buf.buffer, this.buf.byteOffset, this.buf.length).indexOf(this.delimiter);
        if (i >= 0) {
          this.buf = this.buf.subarray(i + this.delimiter.length);
          break;
        }
        if (this.buf.length > this.delimiter.length) this.buf = this.buf.subarray(this.buf.length - this.delimiter.length);
        if (!(await this.fill())) throw malformed("no boundary");
      }
    }
    // After a delimiter: `--` ends the body; else optional blanks, CRLF, the headers, a blank line.
    while (this.buf.length < 2) if (!(await this.fill())) throw malformed("cut short");
    if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) {
      this.done = true;
      this.cancel();
      return null;
    }
    if (++this.parts > MAX_PARTS) throw malformed(`more than ${MAX_PARTS} parts`);
    let end: number;
    for (;;) {
      end = Buffer.from(this.buf.buffer, this.buf.byteOffset, this.buf.length).indexOf("\r\n\r\n");
      if (end >= 0) break;
      if (this.buf.length > MAX_HEADER_BYTES) throw malformed("a part's headers are too large");
      if (!(await this.fill())) throw malformed("cut short in a part's headers");
    }
    const head = new TextDecoder().decode(this.buf.subarray(0, end));
    this.buf = this.buf.subarray(end + 4);
    const lines = head.split("\r\n");
    if (lines[0]!.trim() !== "") throw malformed("no line break after the boundary");
    let disposition = "";
    let type = "";
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === "content-disposition") disposition = value;
      else if (key === "content-type") type = value.toLowerCase();
    }
    if (!/^form-data\b/i.test(disposition)) throw malformed("a part has no Content-Disposition: form-data");
    const name = param(disposition, "name");
    if (name === undefined) throw malformed("a part has no name");
    const filename = param(disposition, "filename*") ?? param(disposition, "filename");
    this.open = true;
    const chunks = () => this.content();
    return {
      name,
      filename,
      type,
      chunks,
      text: async (max: number) => {
        const pieces: Uint8Array[] = [];
        let size = 0;
        for await (const c of chunks()) {
          size += c.byteLength;
          if (size > max) {
            this.cancel();
            throw tooLarge(max);
          }
          pieces.push(c);
        }
        return Buffer.concat(pieces).toString("utf8");
      },
    };
  }

  /**
   * The content of the current part up to the next delimiter, as it arrives. The pieces handed on are views of
   * the body's own chunks (no copy), but for the few bytes at a chunk's end that might begin a delimiter.
   */
  private async *content(): AsyncIterable<Uint8Array> {
    const d = this.delimiter;
    for (;;) {
      const buf = this.buf;
      const i = Buffer.from(buf.buffer, buf.byteOffset, buf.length).indexOf(d);
      if (i >= 0) {
        this.buf = buf.subarray(i + d.length);
        this.open = false;
        if (i > 0) yield buf.subarray(0, i);
        return;
      }
      // All but what could be the start of a delimiter is passed on; the rest waits for the next chunk.
      const keep = Math.min(buf.length, d.length - 1);
      const tail = buf.subarray(buf.length - keep);
      if (buf.length > keep) yield buf.subarray(0, buf.length - keep);
      const next = await this.chunk();
      if (!next) throw malformed("cut short in a part");
      if (tail.length && next.length < d.length) {
        // A chunk too short to end a delimiter begun in the tail: joined, and searched again.
        this.buf = Buffer.concat([tail, next]);
        continue;
      }
      if (tail.length) {
        // A delimiter that begins in the tail ends in the first bytes of the next chunk: only those are copied.
        const probe = Buffer.concat([tail, next.subarray(0, d.length)]);
        const j = probe.indexOf(d);
        if (j >= 0 && j < tail.length) {
          this.buf = next.subarray(j + d.length - tail.length);
          this.open = false;
          if (j > 0) yield tail.subarray(0, j);
          return;
        }
        yield tail;
      }
      this.buf = next;
    }
  }
}

/** A parameter of a Content-Disposition value (`name="x"`, `filename*=UTF-8''x`), or undefined. */
function param(header: string, key: string): string | undefined {
  const re = new RegExp(`;\\s*${key.replace("*", "\\*")}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, "i");
  const m = re.exec(header);
  if (!m) return undefined;
  const raw = m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!;
  if (key.endsWith("*")) {
    const ext = /^([\w-]+)'[^']*'(.*)$/.exec(raw);
    if (!ext) return undefined;
    try {
      return decodeURIComponent(ext[2]!);
    } catch {
      return undefined;
    }
  }
  return raw;
}
