import type { AppContext } from "../context.ts";
import type { StorageConfig } from "../config.ts";
import { localStorage } from "./local.ts";
import { s3Storage } from "./s3.ts";

// The one interface every file goes through (CONTRACT §14): a folder by default, or a bucket of any
// S3-compatible service. Keys are `<collection>/<file name>` and `<collection>/thumbs/<file name>/<WxH>`;
// what a key may hold is decided above (names.ts), the storage only stores bytes under it.

/** What a stored file is: its size in bytes, the type it was stored with, when it was written, an entity tag. */
export interface StoredFile {
  size: number;
  type: string;
  mtime: number;
  etag: string;
}

export interface FileStorage {
  readonly kind: "local" | "s3";
  /**
   * Stores the bytes of `body` under `key`, replacing nothing (keys are new names): the file appears whole or
   * not at all, and when `body` throws nothing stays behind. Answers the size written. `size`, where known up
   * front, is the most bytes `body` can hold (an upload's request length): a file known to be small is written faster.
   */
  write(key: string, body: AsyncIterable<Uint8Array>, opts: { type: string; size?: number }): Promise<number>;
  /** What is stored under `key`, or null. */
  stat(key: string): Promise<StoredFile | null>;
  /**
   * The bytes of `key` (bytes `start`..`end` inclusive with a range) as a Response body: a folder's file as a Blob
   * (Bun sends it from the file), a bucket's as a stream (a Response of an S3 file would redirect to a presigned URL).
   */
  read(key: string, range?: { start: number; end: number }): Blob | ReadableStream<Uint8Array>;
  /** Removes `key`; a missing key is no error. */
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (a folder-like prefix ending in `/`, or "" for all), with when it was written. */
  list(prefix: string): AsyncIterable<{ key: string; mtime: number }>;
}

const opened = new WeakMap<AppContext["config"], FileStorage>();

/** The storage of a context's configuration (made once per configuration). */
export function storageOf(ctx: Pick<AppContext, "config">): FileStorage {
  let s = opened.get(ctx.config);
  if (!s) opened.set(ctx.config, (s = openStorage(ctx.config.storage)));
  return s;
}

/** Opens a storage from its configuration (also for `baas db copy --storage-to` and `baas backup`). */
export function openStorage(config: StorageConfig): FileStorage {
  return config.kind === "s3" ? s3Storage(config) : localStorage(config.dir);
}

/** Copies every file of `from` into `to` (backup, db copy); answers how many were copied. */
export async function copyStorage(from: FileStorage, to: FileStorage): Promise<number> {
  let n = 0;
  for await (const { key } of from.list("")) {
    if (key.endsWith(".partial")) continue;
    const st = await from.stat(key);
    if (!st) continue;
    await to.write(key, bodyChunks(from.read(key)), { type: st.type, size: st.size });
    n++;
  }
  return n;
}

/** The bytes of a body that `read` gave, piece by piece. */
export async function* bodyChunks(body: Blob | ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = (body instanceof Blob ? body.stream() : body).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
