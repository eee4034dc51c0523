/**
 * The list's `like` in memory, in time linear in the value (CONTRACT §8c): SQLite's LIKE, which
 * PostgreSQL's `ILIKE … ESCAPE ''` spells the same. `%` is any run of characters, `_` one character
 * (a code point), ASCII letters match either case, every other character only itself; there is no
 * escape character. A pattern is cut at its `%` into segments: the first must start the value, the
 * last end it, and each one between is found leftmost after the one before (taking the leftmost
 * never loses a match), so no position of the value is looked at twice per segment.
 */

/** `_` in a segment. */
const ANY = -1;
/** Bits per word of a segment's bit masks. */
const WORD = 32;

/** One run of a pattern between two `%`, as code points (ASCII lower-cased; ANY for `_`), with its masks. */
interface Segment {
  chars: Int32Array;
  /** Shift-And masks: per code point, the positions of the segment it may stand at (see findSegment). */
  masks: Map<number, Uint32Array>;
  /** The positions any code point may stand at: those of `_`. */
  anyMask: Uint32Array;
}

/** A value's code points, ASCII lower-cased, read by index. */
type Text = { length: number; at: (i: number) => number };

const lowerAscii = (c: number) => (c >= 65 && c <= 90 ? c + 32 : c);

/** The value as code points; a string without surrogate pairs (nearly all) is read in place. */
function textOf(value: string): Text {
  if (!/[\uD800-\uDFFF]/.test(value)) return { length: value.length, at: (i) => lowerAscii(value.charCodeAt(i)) };
  const points = Int32Array.from(value, (ch) => lowerAscii(ch.codePointAt(0)!));
  return { length: points.length, at: (i) => points[i] };
}

function segmentOf(run: string): Segment {
  const chars = Int32Array.from(run, (ch) => (ch === "_" ? ANY : lowerAscii(ch.codePointAt(0)!)));
  const words = Math.max(1, Math.ceil(chars.length / WORD));
  const anyMask = new Uint32Array(words);
  chars.forEach((c, j) => {
    if (c === ANY) anyMask[j >>> 5] |= 1 << (j & 31);
  });
  const masks = new Map<number, Uint32Array>();
  chars.forEach((c, j) => {
    if (c === ANY) return;
    let m = masks.get(c);
    if (!m) masks.set(c, (m = anyMask.slice()));
    m[j >>> 5] |= 1 << (j & 31);
  });
  return { chars, masks, anyMask };
}

/** Whether `seg` matches the text at `pos` (which leaves room for it). */
function matchesAt(text: Text, pos: number, seg: Segment): boolean {
  const chars = seg.chars;
  for (let j = 0; j < chars.length; j++) if (chars[j] !== ANY && chars[j] !== text.at(pos + j)) return false;
  return true;
}

/**
 * The leftmost position in [from, to - length] where `seg` matches, or -1. Shift-And: bit j of the
 * state says the segment's first j+1 code points match the text ending here; one pass over the text,
 * each step a few operations per 32 code points of the segment.
 */
function findSegment(text: Text, seg: Segment, from: number, to: number): number {
  const k = seg.chars.length;
  const words = seg.anyMask.length;
  const state = new Uint32Array(words);
  const last = (k - 1) >>> 5;
  const lastBit = 1 << ((k - 1) & 31);
  for (let i = from; i < to; i++) {
    const mask = seg.masks.get(text.at(i)) ?? seg.anyMask;
    let carry = 1;
    for (let w = 0; w < words; w++) {
      const v = state[w];
      state[w] = ((v << 1) | carry) & mask[w];
      carry = v >>> 31;
    }
    if (state[last] & lastBit) return i - k + 1;
  }
  return -1;
}

/** A test of values against a `like` pattern (a value without `%` means "contains", as in the list). */
export function likeMatcher(raw: string): (value: string) => boolean {
  // At least two segments: a pattern without `%` was given two.
  const runs = (raw.includes("%") ? raw : `%${raw}%`).split("%");
  const segments = runs.map(segmentOf);
  const first = segments[0];
  const lastSeg = segments[segments.length - 1];
  const middle = segments.slice(1, -1).filter((s) => s.chars.length);
  const least = segments.reduce((n, s) => n + s.chars.length, 0);
  return (value) => {
    const text = textOf(value);
    if (text.length < least) return false;
    const end = text.length - lastSeg.chars.length;
    if (!matchesAt(text, 0, first) || !matchesAt(text, end, lastSeg)) return false;
    let pos = first.chars.length;
    for (const seg of middle) {
      const at = findSegment(text, seg, pos, end);
      if (at < 0) return false;
      pos = at + seg.chars.length;
    }
    return true;
  };
}
