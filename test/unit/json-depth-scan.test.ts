import { expect, test } from "bun:test";
import { MAX_BODY_KEYS, MAX_JSON_DEPTH, readJson } from "../../src/http/body.ts";
import { AppError } from "../../src/errors.ts";

// The depth check of request bodies skips over strings to their closing quote. Its verdict must be the
// one of a plain character-by-character scan (a backslash in a string escapes the next character) on
// any text, well-formed JSON or not: random texts of brackets, quotes, backslashes and letters.

function deeperThanMax(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === "}" || c === "]") depth--;
  }
  return false;
}

async function refusedForDepth(text: string): Promise<boolean> {
  try {
    await readJson(new Request("http://localhost/", { method: "POST", body: text }), 1 << 20);
    return false;
  } catch (err) {
    if (err instanceof AppError && err.code === "bad_request" && /nested deeper/.test(err.message)) return true;
    if (err instanceof AppError && err.code === "invalid_json") return false;
    throw err;
  }
}

test("the depth verdict is the plain scan's on random texts", async () => {
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  // Mostly openers, so that both verdicts occur; quotes and backslashes often enough to open and escape strings.
  const alphabet = ["[", "{", "[", "{", "[", "{", "[", "{", "[", "{", "[", "{", '"', "\\", "\\", "]", "}", "a", ","];
  let deep = 0;
  for (let run = 0; run < 3000; run++) {
    const length = 80 + rand(120);
    let text = "";
    for (let i = 0; i < length; i++) text += alphabet[rand(alphabet.length)];
    const expected = deeperThanMax(text);
    if (expected) deep++;
    expect({ text, refused: await refusedForDepth(text) }).toEqual({ text, refused: expected });
  }
  expect(deep).toBeGreaterThan(100);
  expect(deep).toBeLessThan(2900);
});

/** The same body streamed in random pieces (no Content-Length: the streamed path, scanned piece by piece). */
function streamed(text: string, rand: (n: number) => number): Request {
  const bytes = new TextEncoder().encode(text);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + rand(40);
    pieces.push(bytes.subarray(at, at + n));
    at += n;
  }
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = pieces.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
  return new Request("http://localhost/", { method: "POST", body });
}

/** Which check refused the body, or "parsed"/"invalid" (JSON.parse's verdict). */
async function verdict(request: Request): Promise<string> {
  try {
    await readJson(request, 1 << 20);
    return "parsed";
  } catch (err) {
    if (err instanceof AppError && err.code === "bad_request") return /nested deeper/.test(err.message) ? "depth" : /keys/.test(err.message) ? "keys" : err.message;
    if (err instanceof AppError && err.code === "invalid_json") return "invalid";
    throw err;
  }
}

// The reference: keys of the top-level object counted one character at a time.
function referenceVerdict(text: string): string {
  let depth = 0;
  let inString = false;
  let keys = 0;
  let topIsObject = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") {
      if (++depth > MAX_JSON_DEPTH) return "depth";
      if (depth === 1) (topIsObject = c === "{"), (keys = 0);
    } else if (c === "}" || c === "]") depth--;
    else if (c === ":" && depth === 1 && topIsObject && ++keys > MAX_BODY_KEYS) return "keys";
  }
  try {
    JSON.parse(text);
    return "parsed";
  } catch {
    return "invalid";
  }
}

test("scanned whole or streamed in random pieces, the verdict (depth, key limit, parse) is the plain scan's", async () => {
  // mulberry32: small moduli of a plain LCG's low bits repeat in short cycles.
  let seed = 11;
  const rand = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return (((x ^ (x >>> 14)) >>> 0) % n);
  };
  // Mostly whole members, with strings that hold escaped quotes, backslashes and colons, and now and then stray structure.
  const tokens = ['"a":1,', '"k\\"x":null,', '"b\\\\":2,', '"c:d":"e:f",', '"n":{"x":1,"y":[1,2]},', "{", "}", "[", "]", '"', "\\", ":", ","];
  const seen = new Set<string>();
  for (let run = 0; run < 120; run++) {
    const members = 900 + rand(250);
    let text = "{";
    const strays = run % 3 === 0;
    for (let i = 0; i < members; i++) text += tokens[strays && rand(10) === 0 ? 5 + rand(tokens.length - 5) : rand(5)];
    text = text.replace(/,$/, "") + (rand(2) ? "}" : "");
    const expected = referenceVerdict(text);
    seen.add(expected);
    const bytes = new TextEncoder().encode(text);
    const whole = new Request("http://localhost/", { method: "POST", body: bytes, headers: { "content-length": String(bytes.length) } });
    expect({ run, whole: await verdict(whole) }).toEqual({ run, whole: expected });
    expect({ run, streamed: await verdict(streamed(text, rand)) }).toEqual({ run, streamed: expected });
  }
  expect([...seen].sort()).toEqual(["invalid", "keys", "parsed"]);
});
