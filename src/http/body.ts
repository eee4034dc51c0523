import { AppError, badRequest } from "../errors.ts";

/** Deepest nesting of objects and arrays a JSON body may have (`{"a":{"b":1}}` is 2 levels). */
export const MAX_JSON_DEPTH = 64;

const tooLarge = (max: number) =>
  new AppError(413, "payload_too_large", `the request body is larger than ${Math.floor(max / 1048576)} MiB`);

/**
 * Reads a request body as JSON, whatever its Content-Type, refusing more than `max` bytes
 * while streaming (a lying or missing Content-Length cannot make us buffer more).
 * Returns undefined for an empty body; 400 `invalid_json` for bad JSON.
 */
export async function readJson(request: Request, max: number): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge(max);
  if (!request.body) return undefined;
  if (Number.isFinite(declared) && declared <= SMALL_BODY) {
    // Fast path for small bodies framed by Content-Length (the server reads exactly that many
    // bytes, so this cannot buffer more than declared), decoded by the runtime in one call; the cap is
    // still checked after reading (a string has at most as many characters as its UTF-8 has bytes).
    const text = await request.text();
    if (text.length > max) throw tooLarge(max);
    return parseText(text);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      throw tooLarge(max);
    }
    chunks.push(value);
  }
  return parseBody(Buffer.concat(chunks));
}

/** Bodies up to this size with a Content-Length are read in one piece (no stream reader per request). */
const SMALL_BODY = 1 << 20;

/** Invalid UTF-8 becomes U+FFFD, as in `Request.text()`. */
const UTF8 = new TextDecoder("utf-8", { fatal: false });

function parseBody(bytes: Uint8Array): unknown {
  return bytes.byteLength === 0 ? undefined : parseText(UTF8.decode(bytes));
}

function parseText(text: string): unknown {
  if (!text.trim()) return undefined;
  checkDepth(text);
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
 * Refuses a body nested deeper than MAX_JSON_DEPTH before it is parsed. IMPORTANT: one flat scan
 * of the text, no recursion: a body of 100,000 open brackets must cost a loop, not a stack overflow
 * in the parser or in any later walk of the value (JSON.stringify, field checks).
 */
function checkDepth(text: string): void {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: on to its closing quote, found by indexOf (a quote after an odd run of backslashes is escaped).
      for (;;) {
        const close = text.indexOf('"', i + 1);
        if (close < 0) return;
        let k = close - 1;
        while (text.charCodeAt(k) === 92) k--;
        i = close;
        if ((close - 1 - k) % 2 === 0) break;
      }
    } else if (c === 123 || c === 91) {
      if (++depth > MAX_JSON_DEPTH) throw badRequest(`the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 125 || c === 93) depth--;
  }
}
