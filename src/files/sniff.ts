// The type of a file from its first bytes and its name (CONTRACT §14). IMPORTANT: the client's Content-Type
// decides nothing but a missing extension, and the bytes come first: a PNG whose bytes are HTML is HTML here,
// and is served as such (as an attachment, never inline); a name gives only inert types.

/** Bytes a sniff looks at: enough for every signature below and for a text check. */
export const SNIFF_BYTES = 4096;

const ascii = (s: string) => Array.from(s, (c) => c.charCodeAt(0));

const SIGNATURES: { type: string; at?: number; bytes: (number | null)[] }[] = [
  { type: "image/png", bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: "image/jpeg", bytes: [0xff, 0xd8, 0xff] },
  { type: "image/gif", bytes: ascii("GIF87a") },
  { type: "image/gif", bytes: ascii("GIF89a") },
  { type: "image/webp", bytes: [...ascii("RIFF"), null, null, null, null, ...ascii("WEBP")] },
  { type: "image/bmp", bytes: ascii("BM") },
  { type: "image/x-icon", bytes: [0, 0, 1, 0] },
  { type: "image/avif", at: 4, bytes: ascii("ftypavif") },
  { type: "image/heic", at: 4, bytes: ascii("ftypheic") },
  { type: "image/tiff", bytes: [0x49, 0x49, 0x2a, 0x00] },
  { type: "image/tiff", bytes: [0x4d, 0x4d, 0x00, 0x2a] },
  { type: "application/pdf", bytes: ascii("%PDF-") },
  { type: "application/zip", bytes: [0x50, 0x4b, 0x03, 0x04] },
  { type: "application/gzip", bytes: [0x1f, 0x8b] },
  { type: "application/x-7z-compressed", bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] },
  { type: "application/x-rar-compressed", bytes: ascii("Rar!") },
  { type: "application/wasm", bytes: [0x00, 0x61, 0x73, 0x6d] },
  { type: "audio/mpeg", bytes: ascii("ID3") },
  { type: "audio/mpeg", bytes: [0xff, 0xfb] },
  { type: "audio/ogg", bytes: ascii("OggS") },
  { type: "audio/flac", bytes: ascii("fLaC") },
  { type: "audio/wav", bytes: [...ascii("RIFF"), null, null, null, null, ...ascii("WAVE")] },
  { type: "video/webm", bytes: [0x1a, 0x45, 0xdf, 0xa3] },
  { type: "video/quicktime", at: 4, bytes: ascii("ftypqt") },
  { type: "video/mp4", at: 4, bytes: ascii("ftyp") },
];

function matches(head: Uint8Array, at: number, bytes: (number | null)[]): boolean {
  if (head.length < at + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== null && head[at + i] !== bytes[i]) return false;
  return true;
}

/** Markup a browser would render as a document: any of these in the first bytes makes a text file HTML. */
const HTML_RE = /<(?:!doctype\s+html|html|head|body|script|iframe|object|embed|img|svg|style|title|a\s|div|p[\s>]|meta|link|form|input|br|table|h[1-6])\b/i;

/**
 * The type of a file from its first bytes (up to SNIFF_BYTES): a known signature; else text (UTF-8 without
 * control bytes) as `image/svg+xml`, `text/html`, `application/xml`, `application/json` or `text/plain`; else
 * `application/octet-stream`. Markup anywhere in the head makes text HTML (or SVG): it is never served inline.
 */
export function sniffType(head: Uint8Array): string {
  for (const s of SIGNATURES) if (matches(head, s.at ?? 0, s.bytes)) return s.type;
  if (!head.length) return "text/plain";
  if (!isText(head)) return "application/octet-stream";
  const text = new TextDecoder().decode(head).replace(/^\uFEFF/, "");
  const start = text.trimStart();
  if (/<svg[\s>]/i.test(text)) return "image/svg+xml";
  if (HTML_RE.test(text)) return "text/html";
  if (start.startsWith("<?xml") || /^<[A-Za-z]/.test(start)) return "application/xml";
  if (/^[{[]/.test(start)) {
    try {
      JSON.parse(text);
      return "application/json";
    } catch {
      // Cut at SNIFF_BYTES or not JSON: plain text.
    }
  }
  return "text/plain";
}

/** True when the bytes decode as UTF-8 and hold no control byte but tab, line feed, form feed and carriage return. */
function isText(head: Uint8Array): boolean {
  for (let i = 0; i < head.length; i++) {
    const b = head[i]!;
    if (b < 0x20 && b !== 9 && b !== 10 && b !== 12 && b !== 13) return false;
    if (b === 0x7f) return false;
  }
  // The head may end inside a character: only a complete bad sequence counts.
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * Types a file name's extension gives bytes that carry no signature (sniffed as plain text or unknown binary), or
 * a ZIP container. Only types a browser never runs as a document: no HTML, SVG, XML, script or style sheet, which
 * come from the bytes alone.
 */
const BY_EXTENSION: Record<string, string> = {
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", bmp: "image/bmp",
  ico: "image/x-icon", avif: "image/avif", heic: "image/heic", tif: "image/tiff", tiff: "image/tiff",
  pdf: "application/pdf", zip: "application/zip", gz: "application/gzip", "7z": "application/x-7z-compressed",
  rar: "application/x-rar-compressed", tar: "application/x-tar", rtf: "application/rtf", epub: "application/epub+zip",
  doc: "application/msword", xls: "application/vnd.ms-excel", ppt: "application/vnd.ms-powerpoint",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text", ods: "application/vnd.oasis.opendocument.spreadsheet",
  odp: "application/vnd.oasis.opendocument.presentation",
  mp3: "audio/mpeg", ogg: "audio/ogg", oga: "audio/ogg", flac: "audio/flac", wav: "audio/wav", m4a: "audio/mp4", aac: "audio/aac",
  mp4: "video/mp4", m4v: "video/mp4", webm: "video/webm", mov: "video/quicktime", mkv: "video/x-matroska", avi: "video/x-msvideo",
  txt: "text/plain", csv: "text/csv", tsv: "text/tab-separated-values", md: "text/markdown", markdown: "text/markdown",
  ics: "text/calendar", vcf: "text/vcard", log: "text/plain",
  woff: "font/woff", woff2: "font/woff2", ttf: "font/ttf", otf: "font/otf",
};
/** Of those, the ones a ZIP container may be. */
const ZIP_BASED = new Set(["docx", "xlsx", "pptx", "odt", "ods", "odp", "epub"]);

/** The extension a type's files get when their name has none (the first of BY_EXTENSION's for it). */
export function extensionOf(type: string): string | undefined {
  for (const [ext, t] of Object.entries(BY_EXTENSION)) if (t === type) return ext;
  return undefined;
}

/**
 * The stored type of a file named `name` (CONTRACT §14): what its bytes say (sniffType) when they say more than
 * "plain text" or "some binary" (a signature, or markup, which decides: a `.png` whose bytes are HTML is HTML);
 * else what its extension says, among the inert types of BY_EXTENSION (a CSV is `text/csv`, a `.docx` the
 * Word type, not `application/zip`); else plain text or binary.
 */
export function fileType(head: Uint8Array, name: string, sniffed = sniffType(head)): string {
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
  const named = BY_EXTENSION[ext];
  if (!named) return sniffed;
  if (sniffed === "application/octet-stream" && beginsWithMarkup(head)) return "text/html";
  if (sniffed === "text/plain" || sniffed === "application/octet-stream") return named;
  if (sniffed === "application/zip" && ZIP_BASED.has(ext)) return named;
  return sniffed;
}

/** True when bytes that are not text begin (after blanks) with markup: HTML followed by binary, not to be named inert. */
function beginsWithMarkup(head: Uint8Array): boolean {
  const start = Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, 512)).toString("latin1").trimStart();
  return start.startsWith("<") && (HTML_RE.test(start) || /<svg[\s>]/i.test(start));
}

/** Types served inline (CONTRACT §14): images but SVG, PDF, audio, video and plain text. Anything else is an attachment. */
export function servedInline(type: string): boolean {
  if (type === "image/svg+xml") return false;
  return type.startsWith("image/") || type.startsWith("audio/") || type.startsWith("video/") || type === "application/pdf" || type === "text/plain";
}

/** Whether a sniffed type is allowed by a field's `mime` list (`image/*` covers every image type); no list: any. */
export function typeAllowed(type: string, allowed: readonly string[] | undefined): boolean {
  if (!allowed || !allowed.length) return true;
  return allowed.some((a) => a === type || (a.endsWith("/*") && type.startsWith(a.slice(0, -1))));
}
