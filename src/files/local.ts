import { writeSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { randomBytes } from "node:crypto";
import type { FileStorage, StoredFile } from "./storage.ts";
import { fileType } from "./sniff.ts";

// Files in a folder (`<data>/storage/` by default). A file is written beside its place under a temporary
// name and renamed there when complete, so a reader, a crash or a kill never sees half a file under a key.

/** The largest file written on the JavaScript thread (see writeSmall). */
const ON_THIS_THREAD = 2 * 1024 * 1024;

/** Writes all of `bytes` at the file's position. */
function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.byteLength; ) at += writeSync(fd, bytes, at);
}

/**
 * Writes a file known to be small to `tmp`, each piece as it comes, on this thread (a page-cache copy: no round
 * trip to a thread pool, and the piece let go at once: gathering a file's pieces for one write made the kernel
 * find fresh pages for every upload, twice the system time measured). Answers the size.
 */
async function writeSmall(tmp: string, body: AsyncIterable<Uint8Array>): Promise<number> {
  const fh = await open(tmp, "w");
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.byteLength;
      writeAllSync(fh.fd, chunk);
    }
  } finally {
    await fh.close();
  }
  return size;
}

/**
 * Writes a file of unknown or large size to `tmp` through Bun's file writer, off this thread, so a long upload
 * never holds the event loop while the kernel makes writers wait for the disk; memory stays flat.
 */
async function writeLarge(tmp: string, body: AsyncIterable<Uint8Array>): Promise<number> {
  const sink = Bun.file(tmp).writer({ highWaterMark: 1 << 20 });
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.byteLength;
      // A promise while its buffer is flushing, else a number: awaited either way.
      await sink.write(chunk);
    }
  } catch (err) {
    await Promise.resolve(sink.end()).catch(() => {});
    throw err;
  }
  await sink.end();
  return size;
}

/** Files being written end in this; `list` leaves them out (gc removes old ones through `listPartial`). */
const PARTIAL = ".partial";

/** The type of a stored file, from its first bytes and name once per (key, mtime): a folder keeps no metadata. */
const types = new Map<string, { mtime: number; type: string }>();
const MAX_TYPES = 10_000;

export function localStorage(root: string): FileStorage & { root: string } {
  // Folders known to exist (forgotten after a failed write, so one removed meanwhile is made again).
  const made = new Set<string>();
  // IMPORTANT: keys come from validated names (names.ts), but a key that would leave the root is refused
  // here too, so no caller mistake can read or write outside it.
  const path = (key: string) => {
    const p = join(root, key);
    if (!p.startsWith(root + sep) || key.includes("\0")) throw new Error(`invalid storage key`);
    return p;
  };
  return {
    kind: "local",
    root,
    async write(key, body, opts) {
      const final = path(key);
      const folder = dirname(final);
      if (!made.has(folder)) {
        await mkdir(folder, { recursive: true });
        made.add(folder);
      }
      const tmp = `${final}.${randomBytes(6).toString("hex")}${PARTIAL}`;
      try {
        const size = opts.size !== undefined && opts.size <= ON_THIS_THREAD ? await writeSmall(tmp, body) : await writeLarge(tmp, body);
        await rename(tmp, final);
        return size;
      } catch (err) {
        await rm(tmp, { force: true });
        made.delete(folder);
        throw err;
      }
    },
    async stat(key) {
      const p = path(key);
      let st;
      try {
        st = await stat(p);
      } catch {
        return null;
      }
      if (!st.isFile()) return null;
      const mtime = Math.floor(st.mtimeMs);
      let known = types.get(key);
      if (!known || known.mtime !== mtime) {
        const head = new Uint8Array(await Bun.file(p).slice(0, 4096).arrayBuffer());
        known = { mtime, type: fileType(head, key.slice(key.lastIndexOf("/") + 1)) };
        if (types.size >= MAX_TYPES) types.clear();
        types.set(key, known);
      }
      const file: StoredFile = { size: st.size, type: known.type, mtime, etag: `"${st.size.toString(36)}-${mtime.toString(36)}"` };
      return file;
    },
    read(key, range) {
      const f = Bun.file(path(key));
      return range ? f.slice(range.start, range.end + 1) : f;
    },
    async delete(key) {
      types.delete(key);
      await rm(path(key), { force: true });
    },
    async *list(prefix) {
      const base = prefix ? path(prefix.replace(/\/$/, "")) : root;
      yield* walk(root, base);
    },
  };
}

/** Every file under `dir` (partial ones too, which end in `.partial`), as keys relative to `root`. */
async function* walk(root: string, dir: string): AsyncIterable<{ key: string; mtime: number }> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(root, p);
    else if (e.isFile()) {
      const st = await stat(p).catch(() => null);
      if (st) yield { key: relative(root, p).split(sep).join("/"), mtime: st.mtimeMs };
    }
  }
}
