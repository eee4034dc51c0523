import type { AppContext } from "../context.ts";
import { fileKey, thumbKey } from "./names.ts";
import { bodyChunks, storageOf, type StoredFile } from "./storage.ts";

// Thumbnails (CONTRACT §14) of PNG, JPEG, GIF and WebP images: made at the first request of a size, stored beside
// the file (`<collection>/thumbs/<name>/<WxH>`) and served from there after; requests for one that is being made
// wait for it. The image codecs (images.ts) are loaded at the first thumbnail made, not at start: a server that
// makes none never holds them.
//
// Fit, as PocketBase does: `WxH` scales to cover the box and crops the middle (exactly W by H); `0xH` and `Wx0`
// scale to that height or width, keeping the ratio. A GIF's thumbnail is its first frame.

/** A thumbnail size: width and height in pixels, 0 for "keep the ratio" (not both). */
export interface ThumbSize {
  w: number;
  h: number;
}

/** Largest thumbnail side (CONTRACT §14). */
export const MAX_THUMB = 2000;
/** Largest image (in pixels) a thumbnail is made of: a bigger one is served as it is (a decompression bomb stays unread). */
const MAX_PIXELS = 50_000_000;
/** Largest file a thumbnail is made of. */
const MAX_SOURCE_BYTES = 64 * 1024 * 1024;

const THUMBABLE = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** `WxH` as a size, or null when it is not one (sides 0..2000, not both 0). */
export function parseThumbSize(raw: string): ThumbSize | null {
  const m = /^(\d{1,4})x(\d{1,4})$/.exec(raw);
  if (!m) return null;
  const w = Number(m[1]);
  const h = Number(m[2]);
  if (w > MAX_THUMB || h > MAX_THUMB || (w === 0 && h === 0)) return null;
  return { w, h };
}

/** Thumbnails being made, by key: a second request for the same one waits for the first. */
const making = new Map<string, Promise<{ key: string; stat: StoredFile } | null>>();

/**
 * The thumbnail of a stored file at `size`, made once and kept; null when the file has no thumbnails (another
 * type, too large, or bytes that do not decode): the caller serves the file itself.
 */
export async function thumbnail(ctx: AppContext, collection: string, name: string, st: StoredFile, size: ThumbSize): Promise<{ key: string; stat: StoredFile } | null> {
  if (!THUMBABLE.has(st.type) || st.size > MAX_SOURCE_BYTES) return null;
  const storage = storageOf(ctx);
  const key = thumbKey(collection, name, `${size.w}x${size.h}`);
  const have = await storage.stat(key);
  if (have) return { key, stat: have };
  let job = making.get(key);
  if (!job) {
    job = (async () => {
      try {
        const bytes = Buffer.concat(await Array.fromAsync(bodyChunks(storage.read(fileKey(collection, name)))));
        const out = await resize(bytes, st.type, size);
        if (!out) return null;
        await storage.write(key, (async function* () {
          yield out;
        })(), { type: st.type, size: out.byteLength });
        const made = await storage.stat(key);
        return made ? { key, stat: made } : null;
      } catch (err) {
        ctx.log.warn("thumbnail not made", { collection, name, error: err });
        return null;
      } finally {
        making.delete(key);
      }
    })();
    making.set(key, job);
  }
  return await job;
}

/** The image `bytes` of type `type` at `size` (see the fit above), in the same type; null when it is too large to decode. */
export async function resize(bytes: Buffer, type: string, size: ThumbSize): Promise<Buffer | null> {
  const dims = imageSize(bytes, type);
  if (!dims || dims.w * dims.h > MAX_PIXELS) return null;
  const { Images } = await import("./images.ts");
  const img = await Images.read(bytes);
  const { width, height } = img.bitmap;
  if (size.w && size.h) img.cover({ w: size.w, h: size.h });
  else if (size.w) img.resize({ w: size.w, h: Math.max(1, Math.round((height * size.w) / width)) });
  else img.resize({ w: Math.max(1, Math.round((width * size.h) / height)), h: size.h });
  return await img.getBuffer(type as "image/png");
}

/** An image's width and height read from its header (PNG, GIF, WebP, JPEG), or null when it cannot be read. */
export function imageSize(b: Buffer, type: string): { w: number; h: number } | null {
  if (type === "image/png" && b.length >= 24) return { w: b.readUInt32BE(16), h: b.readUInt32BE(20) };
  if (type === "image/gif" && b.length >= 10) return { w: b.readUInt16LE(6), h: b.readUInt16LE(8) };
  if (type === "image/webp" && b.length >= 30) {
    const chunk = b.toString("ascii", 12, 16);
    if (chunk === "VP8X") return { w: 1 + b.readUIntLE(24, 3), h: 1 + b.readUIntLE(27, 3) };
    if (chunk === "VP8 ") return { w: b.readUInt16LE(26) & 0x3fff, h: b.readUInt16LE(28) & 0x3fff };
    if (chunk === "VP8L") {
      const bits = b.readUInt32LE(21);
      return { w: 1 + (bits & 0x3fff), h: 1 + ((bits >> 14) & 0x3fff) };
    }
    return null;
  }
  if (type === "image/jpeg") {
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return null;
      const marker = b[i + 1]!;
      const len = b.readUInt16BE(i + 2);
      // Start of frame (SOF0..SOF15 but DHT, JPG and DAC) carries the size.
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { h: b.readUInt16BE(i + 5), w: b.readUInt16BE(i + 7) };
      i += 2 + len;
    }
  }
  return null;
}
