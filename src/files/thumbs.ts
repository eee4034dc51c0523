import type { AppContext } from "../context.ts";
import { fileKey, thumbKey } from "./names.ts";
import { bodyChunks, storageOf, type StoredFile } from "./storage.ts";
import type { ThumbDone, ThumbJob } from "./thumb-worker.ts";

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
 * Thumbnails waiting for their turn (one is made at a time, its image read only then): past this, a new size is
 * served as the image itself, not kept (an `<img>` shows it; a 503 it would show broken). Without the bound,
 * parallel requests for distinct sizes each held their image in memory until the image thread got to them.
 */
export const MAX_THUMBS_WAITING = 32;
/** Sizes kept per file: a further size is served as the image itself (one client cannot fill the disk with sizes). */
export const MAX_THUMB_SIZES = 32;

let makingOne = false;
const turns: (() => void)[] = [];

/** Waits for the turn to make a thumbnail: false (no turn) when too many wait. A turn taken must be given back (`next`). */
async function turn(): Promise<boolean> {
  if (!makingOne) {
    makingOne = true;
    return true;
  }
  if (turns.length >= MAX_THUMBS_WAITING) return false;
  await new Promise<void>((resolve) => turns.push(resolve));
  return true;
}

/** Gives the turn to the next waiting thumbnail. */
function next(): void {
  const waiting = turns.shift();
  if (waiting) waiting();
  else makingOne = false;
}

/** How many sizes of a file are kept, up to `max`. */
async function sizesKept(ctx: AppContext, collection: string, name: string, max: number): Promise<number> {
  let n = 0;
  for await (const _ of storageOf(ctx).list(thumbKey(collection, name, ""))) if (++n >= max) break;
  return n;
}

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
      if (!(await turn())) return null;
      try {
        if ((await sizesKept(ctx, collection, name, MAX_THUMB_SIZES)) >= MAX_THUMB_SIZES) return null;
        const bytes = Buffer.concat(await Array.fromAsync(bodyChunks(storage.read(fileKey(collection, name)))));
        const out = await resize(bytes, st.type, size);
        if (worker === null && !warned) {
          warned = true;
          ctx.log.warn("thumbnails are made on the server's own thread: the image thread could not start");
        }
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
        next();
      }
    })().finally(() => making.delete(key));
    making.set(key, job);
  }
  return await job;
}

/**
 * The image `bytes` of type `type` at `size` (see the fit above), in the same type; null when it is too large to
 * decode. Made on a thread of its own (thumb-worker.ts), one thumbnail at a time, so the server's thread goes on
 * answering requests meanwhile; where no worker can be started, on this thread.
 */
export async function resize(bytes: Buffer, type: string, size: ThumbSize): Promise<Buffer | null> {
  const dims = imageSize(bytes, type);
  if (!dims || dims.w * dims.h > MAX_PIXELS) return null;
  const w = imageWorker();
  if (w) {
    try {
      return await w.resize(bytes, type, size);
    } catch (err) {
      if (!(err instanceof ThreadGone)) throw err;
    }
  }
  const { resizeImage } = await import("./images.ts");
  return await resizeImage(bytes, type, size);
}

/** The image thread ended before it answered (its job is made on this thread instead). */
class ThreadGone extends Error {}

interface ImageWorker {
  resize(bytes: Buffer, type: string, size: ThumbSize): Promise<Buffer>;
}

/**
 * The worker's module: beside this one when run from source; in the single binary (where it is an entry point of the
 * build, see package.json), by its path from the project's root, as the binary names what it embeds.
 */
const WORKER_ENTRY = /\$bunfs|~BUN/.test(import.meta.url) ? "./src/files/thumb-worker.ts" : new URL("./thumb-worker.ts", import.meta.url).href;

let warned = false;

/** Where thumbnails are made: on their own thread, on the server's (no thread could start), or none made yet. */
export function imageThread(): "own thread" | "server thread" | "not started" {
  return worker === undefined ? "not started" : worker ? "own thread" : "server thread";
}

/** The image thread: undefined until started; null where none can run (thumbnails are then made on this thread). */
let worker: ImageWorker | null | undefined;

/** The thread thumbnails are made on, started at the first one (and again after one ended); null where none runs. */
function imageWorker(): ImageWorker | null {
  if (worker !== undefined) return worker;
  let thread: Worker & { unref(): void };
  try {
    thread = new Worker(WORKER_ENTRY) as Worker & { unref(): void };
  } catch {
    return (worker = null);
  }
  // It does not keep the process alive.
  thread.unref();
  const waiting = new Map<number, { resolve: (b: Buffer) => void; reject: (e: Error) => void }>();
  let next = 0;
  let answered = false;
  thread.onmessage = (e: MessageEvent<ThumbDone>) => {
    answered = true;
    const job = waiting.get(e.data.id);
    if (!job) return;
    waiting.delete(e.data.id);
    if ("out" in e.data) job.resolve(Buffer.from(e.data.out.buffer, e.data.out.byteOffset, e.data.out.byteLength));
    else job.reject(new Error(e.data.error));
  };
  thread.onerror = () => {
    // A thread that never answered will not start (no worker in this build): none is started again. One that
    // worked and ended (out of memory on a huge image) is started again at the next thumbnail.
    if (worker === self) worker = answered ? undefined : null;
    for (const w of waiting.values()) w.reject(new ThreadGone());
    waiting.clear();
    thread.terminate();
  };
  const self: ImageWorker = {
    resize: (bytes, type, size) =>
      new Promise<Buffer>((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        const job: ThumbJob = { id, bytes, type, size };
        thread.postMessage(job);
      }),
  };
  return (worker = self);
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
