import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../catalog/catalog.ts";
import { AppError, badRequest, notFound } from "../errors.ts";
import { getRecord } from "./read.ts";
import { fileKey, NAME_RE } from "../files/names.ts";
import { servedInline } from "../files/sniff.ts";
import { storageOf, type StoredFile } from "../files/storage.ts";
import { parseThumbSize, thumbnail } from "../files/thumbs.ts";
import { fileFields, namesOf } from "../files/values.ts";

// Downloads (CONTRACT §14): a file is served only through a record the caller may read (404 otherwise, a
// soft-deleted record's too), with headers that keep a browser from running anything it holds: the stored
// (sniffed) type, `nosniff`, a sandboxing CSP, and `attachment` for every type but images (SVG excepted), PDF,
// audio, video and plain text.

const fileNotFound = () => notFound("file not found");

/** `GET /files/:collection/:id/:name[?thumb=WxH][&download=1]` as `p`. */
export async function serveFile(
  ctx: AppContext,
  request: Request,
  collection: string,
  id: string,
  name: string,
  p: Principal,
  query: URLSearchParams,
): Promise<Response> {
  if (!NAME_RE.test(name)) throw fileNotFound();
  const col = await requireCollection(ctx, collection);
  // The read rule of the record decides: 404 when it hides the record, whatever the rule (CONTRACT §14; a role
  // or `disabled` rule, or signing in, would be 403 or 401 on the record itself), and when soft-deleted.
  const record = await getRecord(ctx, col.name, id, p, { includeDeleted: false, expand: [], fields: null }).catch((err: unknown) => {
    if (err instanceof AppError && (err.code === "forbidden" || err.code === "unauthorized")) throw fileNotFound();
    throw err;
  });
  if (!fileFields(col).some((d) => namesOf(record[d.name]).includes(name))) throw fileNotFound();
  const storage = storageOf(ctx);
  let key = fileKey(col.name, name);
  let st = await storage.stat(key);
  if (!st) throw fileNotFound();
  const thumb = query.get("thumb");
  if (thumb !== null && thumb !== "") {
    const size = parseThumbSize(thumb);
    if (!size) throw badRequest('thumb must be WxH with W and H from 0 to 2000, not both 0 (e.g. "100x100", "0x300")');
    const made = await thumbnail(ctx, col.name, name, st, size);
    // A type that has no thumbnails (or a file that does not decode) is served as it is.
    if (made) {
      key = made.key;
      st = made.stat;
    }
  }
  return answerFile(request, (range) => storage.read(key, range), st, name, query.get("download") === "1" || query.get("download") === "true");
}

/** The headers of CONTRACT §14, ETag/If-None-Match (304) and a single byte Range (206; 416 when it cannot be met). */
export function answerFile(
  request: Request,
  read: (range?: { start: number; end: number }) => Blob | ReadableStream<Uint8Array>,
  st: StoredFile,
  name: string,
  download: boolean,
): Response {
  const headers = new Headers({
    "Content-Type": st.type === "text/plain" ? "text/plain; charset=utf-8" : st.type,
    ETag: st.etag,
    "Accept-Ranges": "bytes",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Content-Disposition": `${download || !servedInline(st.type) ? "attachment" : "inline"}; filename="${name}"`,
    // Access can change (a rule, a token that expires): a cache keeps the file but asks again each time (304).
    "Cache-Control": "private, no-cache",
  });
  const inm = request.headers.get("if-none-match");
  if (inm && inm.split(",").some((t) => t.trim() === st.etag || t.trim() === `W/${st.etag}` || t.trim() === "*"))
    return new Response(null, { status: 304, headers });
  const range = request.headers.get("range");
  const ifRange = request.headers.get("if-range");
  if (range && request.method === "GET" && (!ifRange || ifRange === st.etag)) {
    const r = parseRange(range, st.size);
    if (r === "invalid") {
      // Not a single byte range we read: the whole file, as RFC 9110 allows.
    } else if (r === null) {
      // A JSON error like every other, with the file's size.
      throw new AppError(416, "range_not_satisfiable", "the requested range is outside the file", {}, { "Content-Range": `bytes */${st.size}`, "Accept-Ranges": "bytes" });
    } else {
      headers.set("Content-Range", `bytes ${r.start}-${r.end}/${st.size}`);
      headers.set("Content-Length", String(r.end - r.start + 1));
      return new Response(read(r), { status: 206, headers });
    }
  }
  headers.set("Content-Length", String(st.size));
  return new Response(request.method === "HEAD" ? null : read(), { status: 200, headers });
}

/** A single `bytes=` range of a file of `size` bytes: the inclusive bounds, null when it cannot be met, "invalid" when not one we read. */
export function parseRange(header: string, size: number): { start: number; end: number } | null | "invalid" {
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return "invalid";
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0) return null;
    return size === 0 ? null : { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || start > end) return null;
  return { start, end };
}
