import { expect, test } from "bun:test";
import { MAX_JSON_DEPTH, readJson } from "../../src/http/body.ts";
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
