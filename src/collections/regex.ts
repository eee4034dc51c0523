import { RE2JS } from "re2js";

/**
 * Field-rule regexes run on RE2 (the `re2js` port): matching time is linear in the value, whatever
 * the pattern, so no pattern can stall the server. RE2 has no backreferences or lookaround; a pattern
 * using them does not compile and is refused when the rule is set.
 */

/** Longest string value a `regex` rule is run on; a longer one fails the rule without being matched. */
export const MAX_REGEX_VALUE_LENGTH = 10_000;

const MAX_CACHED = 1000;
const compiled = new Map<string, RE2JS | null>();

/** The compile error of `source` under RE2, or null when it compiles. */
export function patternError(source: string): string | null {
  try {
    RE2JS.compile(source);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

function compileCached(source: string): RE2JS | null {
  let re = compiled.get(source);
  if (re === undefined) {
    try {
      re = RE2JS.compile(source);
    } catch {
      // A rule stored before patterns were checked with RE2: nothing matches it.
      re = null;
    }
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(source, re);
  }
  return re;
}

/** True when `value` contains a match of `source` (like `RegExp.test`), in time linear in `value`. */
export function matchesPattern(source: string, value: string): boolean {
  return compileCached(source)?.test(value) ?? false;
}
