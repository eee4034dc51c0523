import { RuleError, quoted } from "./ast.ts";

// Rule text → tokens, in one pass over the characters (no backtracking, no regular expression over the whole).

export type Token =
  /** Punctuation and operators: `(` `)` `,` `||` `&&` `!` `=` `!=` `>` `>=` `<` `<=` `~` `!~` `?=` `?!=`. */
  | { t: "op"; v: string; pos: number }
  | { t: "text"; v: string; raw: string; pos: number }
  | { t: "num"; v: number; raw: string; pos: number }
  /** A name or a dotted path of names (`title`, `post.author.email`, `true`). */
  | { t: "name"; v: string[]; raw: string; pos: number }
  /** An `@` name (`@auth.metadata.plan`, `@request.body.title:isset`), without the `@`. */
  | { t: "at"; v: string[]; isset: boolean; raw: string; pos: number }
  | { t: "end"; pos: number };

const OPERATORS = ["?!=", "||", "&&", "!=", ">=", "<=", "!~", "?=", "(", ")", ",", "!", "=", ">", "<", "~"];
/** The characters operators are made of (not the parentheses and the comma, which stand alone). */
const OPERATOR_CHARS: ReadonlySet<string> = new Set(["=", "!", "<", ">", "~", "?", "&", "|", "^"]);

const isDigit = (c: string) => c >= "0" && c <= "9";
const isNameStart = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_";
const isNameChar = (c: string) => isNameStart(c) || isDigit(c);

/** The tokens of `src`, ending with an `end` token; a RuleError at the first character that cannot start one. */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    const pos = i + 1;
    if (c === "'" || c === '"') {
      i = readText(src, i, out);
      continue;
    }
    if (isDigit(c) || ((c === "-" || c === ".") && isDigit(src[i + 1] ?? "")) || (c === "-" && src[i + 1] === "." && isDigit(src[i + 2] ?? ""))) {
      i = readNumber(src, i, out);
      continue;
    }
    if (isNameStart(c)) {
      const end = readPath(src, i, pos, false);
      const raw = src.slice(i, end);
      out.push({ t: "name", v: raw.split("."), raw, pos });
      i = end;
      continue;
    }
    if (c === "@") {
      if (!isNameStart(src[i + 1] ?? "")) throw new RuleError(`unexpected '@' at ${pos}: a name must follow it`, pos);
      let end = readPath(src, i + 1, pos, true);
      let isset = false;
      if (src.startsWith(":isset", end) && !isNameChar(src[end + 6] ?? "")) {
        isset = true;
        end += 6;
      } else if (src[end] === ":") throw new RuleError(`unexpected ':' at ${end + 1}: only ':isset' may follow a name`, end + 1);
      const raw = src.slice(i, end);
      const name = src.slice(i + 1, isset ? end - 6 : end);
      out.push({ t: "at", v: name.split("."), isset, raw, pos });
      i = end;
      continue;
    }
    // A run of operator characters is one operator, or one followed by `!`s (`&&!`, `= !`): `==`, `<>`, `!==`, `=>`
    // and `&` are named whole as the unknown operators they are, at their first character.
    let run = i;
    while (run < n && OPERATOR_CHARS.has(src[run]!)) run++;
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (run > i && (!op || op.length > run - i || !/^!*$/.test(src.slice(i + op.length, run))))
      throw new RuleError(`unknown operator ${quoted(src.slice(i, run))} at ${pos}`, pos);
    if (!op) {
      const ch = String.fromCodePoint(src.codePointAt(i)!);
      throw new RuleError(`unexpected character ${quoted(ch)} at ${pos}`, pos);
    }
    out.push({ t: "op", v: op, pos });
    i += op.length;
  }
  out.push({ t: "end", pos: n + 1 });
  return out;
}

/**
 * The end of a dotted path starting at `i`: segments of letters, digits and `_` joined by dots. A segment starts
 * with a letter or `_`, except in an `@` name (`at`), whose later segments may be metadata keys such as `2fa`.
 */
function readPath(src: string, i: number, pos: number, at: boolean): number {
  let j = i;
  for (;;) {
    while (j < src.length && isNameChar(src[j]!)) j++;
    if (src[j] !== ".") return j;
    const next = src[j + 1] ?? "";
    if (!(at ? isNameChar(next) : isNameStart(next))) {
      const where = j + 1;
      throw new RuleError(`unexpected '.' at ${where}: a name must follow it in ${quoted(src.slice(pos - 1, j + 1))}`, where);
    }
    j++;
  }
}

/** Reads a quoted text from `i` (its quote); returns the index after the closing quote. */
function readText(src: string, i: number, out: Token[]): number {
  const quote = src[i]!;
  const pos = i + 1;
  let v = "";
  let j = i + 1;
  while (j < src.length) {
    const c = src[j]!;
    if (c === quote) {
      out.push({ t: "text", v, raw: src.slice(i, j + 1), pos });
      return j + 1;
    }
    if (c === "\\") {
      const e = src[j + 1];
      if (e !== "\\" && e !== "'" && e !== '"') {
        throw new RuleError(`unknown escape ${quoted(`\\${e ?? ""}`)} at ${j + 1}: write \\\\, \\' or \\" (no other escapes)`, j + 1);
      }
      v += e;
      j += 2;
      continue;
    }
    // IMPORTANT: PostgreSQL cannot hold a NUL in text, so a literal with one could match on SQLite only.
    if (c === "\u0000") throw new RuleError(`a NUL character in text at ${j + 1}`, j + 1);
    v += c;
    j++;
  }
  throw new RuleError(`unterminated text starting at ${pos}`, pos);
}

/** Reads a number from `i`; returns the index after it. */
function readNumber(src: string, i: number, out: Token[]): number {
  const pos = i + 1;
  let j = i;
  if (src[j] === "-") j++;
  while (isDigit(src[j] ?? "")) j++;
  if (src[j] === "." && isDigit(src[j + 1] ?? "")) {
    j++;
    while (isDigit(src[j] ?? "")) j++;
  }
  if ((src[j] === "e" || src[j] === "E") && (isDigit(src[j + 1] ?? "") || ((src[j + 1] === "+" || src[j + 1] === "-") && isDigit(src[j + 2] ?? "")))) {
    j += 2;
    while (isDigit(src[j] ?? "")) j++;
  }
  const raw = src.slice(i, j);
  if (isNameChar(src[j] ?? "") || src[j] === ".") throw new RuleError(`unexpected ${quoted(src.slice(i, j + 1))} at ${pos}: not a number`, pos);
  const v = Number(raw);
  if (!Number.isFinite(v)) throw new RuleError(`number ${quoted(raw)} at ${pos} is out of range`, pos);
  out.push({ t: "num", v: Object.is(v, -0) ? 0 : v, raw, pos });
  return j;
}
