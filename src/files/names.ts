import { randomBytes } from "node:crypto";

// Stored file names (CONTRACT §14): `<10 random characters>_<the original name, sanitised>`. The random part
// makes every name new (no upload replaces another's file) and unguessable; the sanitised part keeps names
// readable while holding only characters safe in a path, a URL and a header.

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
/** Longest sanitised original kept (without its extension). */
const MAX_BASE = 100;

/** A valid stored name: what `fileName` makes (checked before any name reaches a storage key). */
export const NAME_RE = /^[a-z0-9]{10}_[A-Za-z0-9._-]{1,120}$/;

/** A new stored name for an upload called `original`. */
export function fileName(original: string | undefined): string {
  const bytes = randomBytes(10);
  let id = "";
  for (const b of bytes) id += ALPHABET[b % ALPHABET.length];
  return `${id}_${sanitise(original ?? "")}`;
}

const LATIN: Record<string, string> = { Æ: "AE", æ: "ae", Ø: "O", ø: "o", ß: "ss", Œ: "OE", œ: "oe", Ł: "L", ł: "l", Đ: "D", đ: "d", Þ: "Th", þ: "th" };

/** The original name as letters, digits, `.`, `-` and `_` only: no path, no leading dot. */
function sanitise(original: string): string {
  const base = original.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  const stem = (dot > 0 ? base.slice(0, dot) : base)
    // Accented letters lose their accents (é is e and a combining mark, which goes), the Latin letters that
    // do not decompose are spelled out, others become _.
    .replace(/[ÆæØøßŒœŁłĐđÞþ]/g, (c) => LATIN[c]!)
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .replace(/[^A-Za-z0-9_-]+/g, "_")
    .replace(/^[_-]+|_+$/g, "")
    .slice(0, MAX_BASE);
  const ext = dot > 0 ? base.slice(dot + 1).replace(/[^A-Za-z0-9]+/g, "").slice(0, 10).toLowerCase() : "";
  return (stem || "file") + (ext ? `.${ext}` : "");
}

/** The storage key of a file of a collection. */
export const fileKey = (collection: string, name: string) => `${collection}/${name}`;
/** The storage key of a thumbnail of a file. */
export const thumbKey = (collection: string, name: string, size: string) => `${collection}/thumbs/${name}/${size}`;
