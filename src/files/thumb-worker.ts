import { resizeImage } from "./images.ts";

// The thread thumbnails are made on (thumbs.ts starts it at the first one): decoding and encoding an image in
// JavaScript takes tens of milliseconds for a photo and seconds for a large one, which on the server's own thread
// would hold every other request. One message per thumbnail, answered with its bytes or the error.

/** What thumbs.ts asks: an image and the size to make of it. */
export interface ThumbJob {
  id: number;
  bytes: Uint8Array;
  type: string;
  size: { w: number; h: number };
}

/** What the worker answers: the thumbnail's bytes, or why it could not be made. */
export type ThumbDone = { id: number; out: Uint8Array } | { id: number; error: string };

declare const self: Worker;

self.onmessage = async (e: MessageEvent<ThumbJob>) => {
  const { id, bytes, type, size } = e.data;
  let done: ThumbDone;
  try {
    done = { id, out: await resizeImage(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), type, size) };
  } catch (err) {
    done = { id, error: err instanceof Error ? err.message : String(err) };
  }
  self.postMessage(done);
};
