import { MAX_FIELDS } from "../catalog/types.ts";
import { AppError, ValidationError, badRequest, payloadTooLarge } from "../errors.ts";

/** Deepest nesting of objects and arrays a JSON body may have (`{"a":{"b":1}}` is 2 levels). */
export const MAX_JSON_DEPTH = 64;

const tooLarge = (max: number) => payloadTooLarge(max);

/**
 * The most keys an object may have where a body holds records (a record, each record of a bulk insert,
 * each operation of a batch and its data), and in the object at the top of any other body: twice the 500
 * fields a collection can have, so a record read back with its system and relation fields always fits.
 */
export const MAX_BODY_KEYS = 1000;

/**
 * The most keys a body may hold in all its objects, at any depth (a body of records: 500 records of 1,000 keys
 * each), and the most objects and arrays: past either, 400 before it is parsed. Beside the per-object limit above
 * (which applies where records are), these bound what nested values cost: 16 MiB of `{}` (five million objects)
 * took 1.7 s and 480 MB to parse, and a `json` field holding them cost as much again at every read.
 */
const MAX_KEYS_IN_ALL: Record<BodyShape, number> = { object: 100_000, record: 100_000, records: 500_000, batch: 500_000 };
export const MAX_BODY_CONTAINERS = 250_000;

/**
 * Where a body's records are, for the key limit: `object` (any other body: its top-level object),
 * `record` (the body is one record), `records` (an array of records: bulk), `batch` (`{ operations: [{ op, id, data }] }`).
 */
export type BodyShape = "object" | "record" | "records" | "batch";

// How deep the objects under the key limit lie (the body's own value is depth 1).
const KEY_DEPTH: Record<BodyShape, number> = { object: 1, record: 1, records: 2, batch: 4 };

/**
 * Reads a request body as JSON, whatever its Content-Type, refusing more than `max` bytes
 * while streaming (a lying or missing Content-Length cannot make us buffer more).
 * Returns undefined for an empty body; 400 `invalid_json` for bad JSON. IMPORTANT: the text is
 * scanned before it is parsed (as it streams in, for a large body): nesting deeper than
 * MAX_JSON_DEPTH is 400, and an object with more than MAX_BODY_KEYS keys where `shape` says records
 * (or a body's top-level object) is refused without parsing it. Parsing an object of many keys costs
 * about a microsecond a key on the event loop: a 15 MB body of 900,000 null keys held every request
 * of the server for seconds. For a records shape that refusal is returned, not thrown (422 rule
 * `fields`; in a batch 400 `batch_failed`), for the service to raise after the credential, collection
 * and rule checks that CONTRACT puts first (`defer`/`bodyOf`).
 */
export async function readJson(request: Request, max: number, shape: BodyShape = "object"): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge(max);
  if (!request.body) return undefined;
  const scan = new BodyScan(KEY_DEPTH[shape], MAX_KEYS_IN_ALL[shape]);
  if (Number.isFinite(declared) && declared <= SMALL_BODY) {
    // Fast path for small bodies framed by Content-Length (the server reads exactly that many
    // bytes, so this cannot buffer more than declared), decoded by the runtime in one call; the cap is
    // still checked after reading (a string has at most as many characters as its UTF-8 has bytes).
    const text = await request.text();
    if (text.length > max) throw tooLarge(max);
    if (!scan.feed(text)) return tooManyKeys(shape, scan);
    return parseText(text);
  }
  const parts: string[] = [];
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let size = 0;
  const reader = request.body.getReader();
  const stop = () => void reader.cancel().catch(() => {});
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      stop();
      throw tooLarge(max);
    }
    // Decoded and scanned piece by piece: no long pause at the end, and a refused body is neither read to
    // its end nor decoded past the piece where it failed (a chunk may hold the whole body).
    for (let at = 0; at < value.byteLength; at += SCAN_PIECE) {
      const text = decoder.decode(value.subarray(at, at + SCAN_PIECE), { stream: true });
      let fits: boolean;
      try {
        fits = scan.feed(text);
      } catch (err) {
        stop();
        throw err;
      }
      if (!fits) {
        stop();
        return tooManyKeys(shape, scan);
      }
      parts.push(text);
    }
  }
  parts.push(decoder.decode());
  if (size === 0) return undefined;
  return parseText(parts.join(""));
}

/** Bodies up to this size with a Content-Length are read in one piece (no stream reader per request). */
const SMALL_BODY = 1 << 20;
/** A larger body is decoded and scanned in pieces of this many bytes. */
const SCAN_PIECE = 1 << 18;

/**
 * The answer to a body with an object of more than MAX_BODY_KEYS keys (see readJson): thrown at once for
 * any other body (like the depth check), returned for a body of records.
 */
function tooManyKeys(shape: BodyShape, scan: BodyScan): AppError {
  const at = scan.overflow!;
  if (shape === "object") throw badRequest(`an object of the request body has more than ${MAX_BODY_KEYS} keys`);
  const field = at.key ?? "";
  const message = `a record has at most ${MAX_BODY_KEYS} keys (a collection has at most ${MAX_FIELDS} fields).`;
  if (shape === "record") return new ValidationError([{ field, rule: "fields", message }]);
  if (shape === "records") {
    const index = at.path[0] ?? 0;
    return new ValidationError([{ field, rule: "fields", message, index }], { index });
  }
  // A batch: which operation, by its index; its op is not read (the body is never parsed).
  const index = at.path[0] ?? 0;
  return new AppError(400, "batch_failed", `operation ${index} (unknown): ${message}`, { index, op: "unknown" });
}

function parseText(text: string): unknown {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    const reason = parseFailure((err as Error).message);
    throw new AppError(400, "invalid_json", reason ? `malformed JSON body: ${reason}` : "malformed JSON body");
  }
}

// The parser's reasons that quote nothing of the body but a structural character.
const SAFE_REASON =
  /^(?:Expected '[\]}:,]'[a-z ]*|Unexpected (?:token '[\][{}:,.]'|EOF)|Unterminated string|Invalid number|Property name must be a string literal|Single quotes \('\) are not allowed in JSON|Unable to parse JSON string)$/;
// Reasons followed by a piece of the body: only their words are kept.
const QUOTING_REASON = /^(?:Unexpected identifier|Unrecognized token|Invalid escape character)\b/;

/**
 * Why JSON.parse refused a body, in words safe to answer and log. IMPORTANT: the parser quotes the body
 * ("Unexpected identifier \"hunter2\""), and a malformed body is most often a hand-written one holding a
 * password or the admin secret: nothing of its text may reach the answer or the log (LOG_LEVEL=debug logs
 * why each 4xx was answered). Unknown reasons are dropped.
 */
function parseFailure(message: string): string {
  const reason = message.replace(/^JSON Parse error: /, "");
  if (SAFE_REASON.test(reason)) return reason;
  return QUOTING_REASON.exec(reason)?.[0] ?? (/is not a valid unicode escape$/.test(reason) ? "Invalid unicode escape" : "");
}

/**
 * One flat pass over a body's text, fed in pieces as it arrives, before anything parses it. IMPORTANT:
 * no recursion and no value is built: a body of 100,000 open brackets costs a loop, not a stack overflow
 * in the parser or in any later walk of the value (JSON.stringify, field checks), and a million keys
 * cost a count, not a million properties. Nesting past MAX_JSON_DEPTH throws 400; `feed` returns false
 * once an object at depth `keyDepth` or less has more than MAX_BODY_KEYS keys (`overflow` says where).
 * Malformed text is scanned as far as it goes and left for JSON.parse to refuse.
 */
class BodyScan {
  private depth = 0;
  private keys = 0;
  private containers = 0;
  private inString = false;
  // Backslashes just before the current place inside a string, carried from one piece to the next.
  private backslashes = 0;
  // Per depth up to keyDepth: keys counted in the object there, or the index of the array element.
  private readonly counts: number[];
  private readonly isObject: boolean[];
  /** Where the key limit was passed: the array indices on the way there, and the key's name when known. */
  overflow: { path: number[]; key: string | null } | null = null;

  constructor(
    private readonly keyDepth: number,
    private readonly maxKeys: number,
  ) {
    this.counts = new Array<number>(keyDepth + 1).fill(0);
    this.isObject = new Array<boolean>(keyDepth + 1).fill(false);
  }

  feed(text: string): boolean {
    const { keyDepth, counts, isObject } = this;
    let depth = this.depth;
    // The last string closed in this piece (a key, when a colon follows it).
    let keyStart = -1;
    let keyEnd = -1;
    let i = 0;
    if (this.inString) i = this.skipString(text, 0);
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 34) {
        const close = this.skipString(text, i + 1);
        keyStart = i;
        keyEnd = close;
        i = close - 1;
      } else if (c === 123 || c === 91) {
        if (++depth > MAX_JSON_DEPTH) throw badRequest(`the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`);
        if (++this.containers > MAX_BODY_CONTAINERS) throw badRequest(`the JSON body holds more than ${MAX_BODY_CONTAINERS} objects and arrays`);
        if (depth <= keyDepth && depth > 0) {
          counts[depth] = 0;
          isObject[depth] = c === 123;
        }
      } else if (c === 125 || c === 93) depth--;
      else if (c === 58 && ++this.keys > this.maxKeys) {
        // Outside strings a colon only ever follows a key.
        throw badRequest(`the JSON body holds more than ${this.maxKeys} keys in all its objects`);
      }
      if (depth <= keyDepth && depth > 0 && (c === 58 || c === 44)) {
        if (c === 58 && isObject[depth]) {
          if (++counts[depth]! > MAX_BODY_KEYS) {
            this.depth = depth;
            this.overflow = { path: this.arrayPath(depth), key: keyName(text, keyStart, keyEnd) };
            return false;
          }
        } else if (c === 44 && !isObject[depth]) counts[depth]!++;
      }
    }
    this.depth = depth;
    return true;
  }

  /**
   * From `from` inside a string: the index after its closing quote (a quote after an odd run of
   * backslashes is escaped), or the text's length when the string goes on in the next piece.
   */
  private skipString(text: string, from: number): number {
    let i = from;
    for (;;) {
      const close = text.indexOf('"', i);
      if (close < 0) {
        let k = text.length - 1;
        while (k >= i && text.charCodeAt(k) === 92) k--;
        const run = text.length - 1 - k;
        this.backslashes = k < i ? this.backslashes + run : run;
        this.inString = true;
        return text.length;
      }
      let k = close - 1;
      while (k >= i && text.charCodeAt(k) === 92) k--;
      const run = close - 1 - k + (k < i ? this.backslashes : 0);
      this.backslashes = 0;
      i = close + 1;
      if (run % 2 === 0) {
        this.inString = false;
        return i;
      }
    }
  }

  /** The index of the array element at each array level above `depth`. */
  private arrayPath(depth: number): number[] {
    const path: number[] = [];
    for (let d = 1; d < depth; d++) if (!this.isObject[d]) path.push(this.counts[d]!);
    return path;
  }
}

/** The name of the key between `start` and `end` (its quotes) when it lies in this piece, else null. */
function keyName(text: string, start: number, end: number): string | null {
  if (start < 0 || end > text.length || end - start > 1000) return null;
  try {
    const name = JSON.parse(text.slice(start, end));
    return typeof name === "string" ? name.slice(0, 100) : null;
  } catch {
    return null;
  }
}
