// What a comparison of two values known in memory answers: the same as the SQL that compile.ts writes gives for
// the same values in a column, on either engine. A rule's logic has two values: a comparison is true or false,
// never unknown.
// - Only values of one type compare: text with text, numbers with numbers, booleans with booleans. A comparison
//   of values of different types is false (`!=` true); no text is read as a number.
// - A comparison with a value that is null is false (`!=` true), except with the literal `null`: `x = null` is
//   true where x is null or missing.
// - Texts order by code point (SQLite's BINARY collation, PostgreSQL's "C"); `~` ignores ASCII case only.
// - Lists (`?=`, `?!=`): an element equals a value of its own JSON type; `?!=` is "some element differs".

/** The kernel comparisons compile.ts and fold() share: each operator of the language is one of them or its negation. */
export type Kernel = "=" | "<" | "<=" | ">" | ">=" | "~" | "?=" | "?!=" | "notnull";

const SURROGATE = /[\uD800-\uDFFF]/;

/** Texts in code point order (UTF-16 order differs from it only where surrogates meet characters above U+E000). */
export function compareText(a: string, b: string): number {
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < x.length && i < y.length; i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d) return d < 0 ? -1 : 1;
  }
  return x.length < y.length ? -1 : x.length > y.length ? 1 : 0;
}

/** ASCII letters lower-cased, every other character as it is: the case LIKE ignores. */
const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (run) => run.toLowerCase());

/** The LIKE pattern of `~`: the text itself when it holds a `%`, else "contains": `%text%` (as the list filter's `like`). */
export function likePattern(text: string): string {
  return text.includes("%") ? text : `%${text}%`;
}

/**
 * SQLite's LIKE without an escape character (PostgreSQL's ILIKE in the C locale): `%` any run, `_` one character,
 * ASCII case ignored. Greedy matching with one remembered `%`: time linear in the pattern times the text, whatever
 * they hold.
 */
export function likeMatch(text: string, pattern: string): boolean {
  const s = [...asciiLower(text)];
  const p = [...asciiLower(pattern)];
  let i = 0;
  let j = 0;
  let star = -1;
  let mark = 0;
  while (i < s.length) {
    if (j < p.length && p[j] === "%") {
      star = j++;
      mark = i;
    } else if (j < p.length && (p[j] === "_" || p[j] === s[i])) {
      i++;
      j++;
    } else if (star >= 0) {
      j = star + 1;
      i = ++mark;
    } else return false;
  }
  while (j < p.length && p[j] === "%") j++;
  return j === p.length;
}

const isScalar = (v: unknown): v is string | number | boolean => typeof v === "string" || typeof v === "number" || typeof v === "boolean";

/** Equality of two values known in memory: both scalars of one type, and equal. */
export function sameScalar(a: unknown, b: unknown): boolean {
  return isScalar(a) && typeof a === typeof b && a === b;
}

/** The kernel comparison of two known values (`b` is unused by notnull). */
export function fold(kernel: Kernel, a: unknown, b: unknown): boolean {
  switch (kernel) {
    case "notnull":
      return a !== null && a !== undefined;
    case "=":
      return sameScalar(a, b);
    case "<":
    case "<=":
    case ">":
    case ">=": {
      let d: number;
      if (typeof a === "number" && typeof b === "number") d = a - b;
      else if (typeof a === "string" && typeof b === "string") d = compareText(a, b);
      else return false;
      return kernel === "<" ? d < 0 : kernel === "<=" ? d <= 0 : kernel === ">" ? d > 0 : d >= 0;
    }
    case "~":
      return typeof a === "string" && typeof b === "string" && likeMatch(a, likePattern(b));
    case "?=":
      return Array.isArray(a) && a.some((e) => sameScalar(e, b));
    case "?!=":
      return Array.isArray(a) && a.some((e) => !sameScalar(e, b));
  }
}
