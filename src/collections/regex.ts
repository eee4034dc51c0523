import type { RE2JS } from "re2js";

/** re2js (and its Unicode tables) is loaded with the first pattern, not at start: most collections have none. */
let re2: typeof RE2JS | null = null;
const loadRe2 = () => (re2 ??= (require("re2js") as typeof import("re2js")).RE2JS);

/**
 * Field-rule regexes run on RE2 (the `re2js` port): matching time is linear in the value, whatever
 * the pattern, so no pattern can stall the server. RE2 has no backreferences or lookaround; a pattern
 * using them does not compile and is refused when the rule is set.
 */

/** Longest string value a `regex` rule is run on; a longer one fails the rule without being matched. */
export const MAX_REGEX_VALUE_LENGTH = 10_000;

/**
 * Largest compiled program (RE2's instruction count) a pattern may have. Matching is linear in the
 * value but also proportional to the program in the worst case: on a 10,000-character value the
 * adversarial `(?:a?){N}a{N}` took 16 ms at 902 instructions and 196 ms at 3,002 (re2js, a slow 2-core
 * machine), while ordinary patterns stay at a few milliseconds whatever their size (`^[a-z]{1,255}$`,
 * 513 instructions: 1–3 ms). 1,000 admits bounded repeats up to a few hundred (a length-limited slug, a
 * 255-character name) and keeps the worst case near 20 ms.
 */
export const MAX_PROGRAM_SIZE = 1000;

const MAX_CACHED = 1000;
const compiled = new Map<string, RE2JS | null>();

/** `source` compiled for a field rule, or the reason it is refused. */
function compilePattern(source: string): RE2JS | string {
  let re: RE2JS;
  try {
    re = loadRe2().compile(source);
  } catch (err) {
    return (err as Error).message;
  }
  const size = re.programSize();
  if (size > MAX_PROGRAM_SIZE)
    return `pattern too large: it compiles to ${size} instructions, at most ${MAX_PROGRAM_SIZE} (long bounded repeats such as {1,500} count once per repetition: bound the length with min/max instead)`;
  return re;
}

/** Why RE2 refuses `source` for a field rule (syntax it lacks, or too large), or null when it is fine. */
export function patternError(source: string): string | null {
  const re = compilePattern(source);
  return typeof re === "string" ? re : null;
}

function compileCached(source: string): RE2JS | null {
  let re = compiled.get(source);
  if (re === undefined) {
    const made = compilePattern(source);
    // A rule stored before patterns were checked this way and refused now: nothing matches it.
    re = typeof made === "string" ? null : made;
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(source, re);
  }
  return re;
}

/** True when `value` contains a match of `source` (like `RegExp.test`), in time linear in `value`. */
export function matchesPattern(source: string, value: string): boolean {
  return compileCached(source)?.test(value) ?? false;
}
