import { badRequest } from "../errors.ts";
import { matchesPattern } from "./regex.ts";
import { isValidFieldName, type FieldRule } from "./types.ts";
import type { FieldError } from "../errors.ts";
import type { Collection } from "./types.ts";

/** Longest `regex` a field rule may carry: long patterns are where pathological ones hide. */
export const MAX_REGEX_LENGTH = 256;
const MAX_ENUM_VALUES = 1000;

/** Number of characters of a string, counting an astral character once. */
function charLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a && b && typeof a === "object" && typeof b === "object") return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

/** The measure `min`/`max` compare for a value, with the words of its message; null when they do not apply. */
function measure(v: unknown): { n: number; at: (word: string, bound: number) => string } | null {
  if (typeof v === "number") return { n: v, at: (w, b) => `must be ${w} ${b}.` };
  if (typeof v === "string") return { n: charLength(v), at: (w, b) => `must be ${w} ${b} characters.` };
  if (Array.isArray(v)) return { n: v.length, at: (w, b) => `must have ${w} ${b} items.` };
  return null;
}

/**
 * Checks a record's values against the collection's field rules (SPEC 2.3, CONTRACT §4) and
 * returns every failure, in `field_rules` order. `mode` "create": `required` fails on missing
 * or null; "update": only on null. `min`/`max`/`regex`/`enum` look at present non-null values.
 */
export function validateFieldRules(col: Collection, data: Record<string, unknown>, mode: "create" | "update"): FieldError[] {
  const errors: FieldError[] = [];
  for (const rule of col.fieldRules) {
    const f = rule.field;
    const present = Object.hasOwn(data, f);
    const v = present ? data[f] : undefined;
    if (v === null || v === undefined) {
      if (rule.required && (v === null || mode === "create"))
        errors.push({ field: f, rule: "required", message: `"${f}" is required.` });
      continue;
    }
    const m = rule.min !== undefined || rule.max !== undefined ? measure(v) : null;
    if (m && rule.min !== undefined && m.n < rule.min)
      errors.push({ field: f, rule: "min", message: `"${f}" ${m.at("at least", rule.min)}` });
    if (m && rule.max !== undefined && m.n > rule.max)
      errors.push({ field: f, rule: "max", message: `"${f}" ${m.at("at most", rule.max)}` });
    if (rule.regex !== undefined && typeof v === "string" && !matchesPattern(rule.regex, v))
      errors.push({ field: f, rule: "regex", message: `"${f}" must match the pattern ${rule.regex}.` });
    if (rule.enum !== undefined && !rule.enum.some((e) => sameValue(e, v)))
      errors.push({
        field: f,
        rule: "enum",
        message: `"${f}" must be one of: ${rule.enum.map((e) => JSON.stringify(e)).join(", ")}.`,
      });
  }
  return errors;
}

/**
 * Refuses patterns whose matching time can explode (catastrophic backtracking): a quantified
 * group that itself holds a quantifier or an alternation (`(a+)+`, `(a|aa)*`), backreferences,
 * and more than a few unbounded quantifiers in a row. Returns the reason, or null when safe.
 */
export function unsafePatternReason(source: string): string | null {
  if (source.length > MAX_REGEX_LENGTH) return `is longer than ${MAX_REGEX_LENGTH} characters`;
  // Walk the pattern, tracking for each open group whether it holds a quantifier or `|`.
  const stack: { inner: boolean }[] = [];
  let unbounded = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const n = source[i + 1] ?? "";
      if (!inClass && (/[1-9]/.test(n) || n === "k")) return "uses a backreference";
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") {
      inClass = true;
      continue;
    }
    if (c === "(") {
      stack.push({ inner: false });
      // Skip a group's kind marker: (?: (?= (?! (?<= (?<! (?<name>
      const kind = /^\(\?(?::|=|!|<=|<!|<[A-Za-z_$][\w$]*>)/.exec(source.slice(i, i + 80));
      if (kind) i += kind[0].length - 1;
      continue;
    }
    if (c === "|") {
      if (stack.length) stack[stack.length - 1].inner = true;
      continue;
    }
    const quant = quantifierAt(source, i);
    if (quant) {
      if (quant.unbounded) unbounded++;
      if (stack.length) stack[stack.length - 1].inner = true;
      i = quant.end;
      continue;
    }
    if (c === ")") {
      const group = stack.pop();
      const after = quantifierAt(source, i + 1);
      if (group?.inner && after && after.repeats) return "repeats a group that holds a quantifier or an alternation";
      if (group?.inner && stack.length) stack[stack.length - 1].inner = true;
    }
  }
  if (unbounded > 4) return "has more than 4 unbounded quantifiers";
  return null;
}

/** The quantifier starting at `i` (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, with an optional lazy `?`). */
function quantifierAt(s: string, i: number): { end: number; unbounded: boolean; repeats: boolean } | null {
  const c = s[i];
  let end: number;
  let unbounded: boolean;
  let repeats: boolean;
  if (c === "*" || c === "+") {
    end = i;
    unbounded = true;
    repeats = true;
  } else if (c === "?") {
    end = i;
    unbounded = false;
    repeats = false;
  } else if (c === "{") {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(i, i + 24));
    if (!m) return null;
    end = i + m[0].length - 1;
    unbounded = m[2] !== undefined && m[3] === "";
    repeats = unbounded || Number(m[3] ?? m[1]) > 1;
  } else return null;
  if (s[end + 1] === "?") end++;
  return { end, unbounded, repeats };
}

const RULE_KEYS = new Set(["field", "required", "min", "max", "regex", "enum"]);

/**
 * Checks a `field_rules` list as given to PUT …/rules or collection create; 400 naming the
 * first problem (unknown key, wrong type, regex that does not compile or is unsafe, min > max,
 * empty enum). Returns the rules in their stored form (null options dropped).
 */
export function parseFieldRules(input: unknown): FieldRule[] {
  if (!Array.isArray(input)) throw badRequest("field_rules must be an array");
  if (input.length > 1000) throw badRequest("field_rules holds at most 1000 rules");
  return input.map((r, i) => {
    const where = `field_rules[${i}]`;
    if (!r || typeof r !== "object" || Array.isArray(r)) throw badRequest(`${where} must be an object`);
    const raw = r as Record<string, unknown>;
    for (const k of Object.keys(raw)) if (!RULE_KEYS.has(k)) throw badRequest(`${where}: unknown key "${k}"`);
    if (typeof raw.field !== "string" || !isValidFieldName(raw.field))
      throw badRequest(`${where}: "field" must be a valid field name`);
    const rule: FieldRule = { field: raw.field };
    if (raw.required !== undefined && raw.required !== null) {
      if (typeof raw.required !== "boolean") throw badRequest(`${where}: "required" must be true or false`);
      rule.required = raw.required;
    }
    for (const k of ["min", "max"] as const) {
      const v = raw[k];
      if (v === undefined || v === null) continue;
      if (typeof v !== "number" || !Number.isFinite(v)) throw badRequest(`${where}: "${k}" must be a number`);
      rule[k] = v;
    }
    if (rule.min !== undefined && rule.max !== undefined && rule.min > rule.max)
      throw badRequest(`${where}: "min" (${rule.min}) is greater than "max" (${rule.max})`);
    if (raw.regex !== undefined && raw.regex !== null) {
      if (typeof raw.regex !== "string" || !raw.regex) throw badRequest(`${where}: "regex" must be a non-empty string`);
      try {
        new RegExp(raw.regex);
      } catch (err) {
        throw badRequest(`${where}: "regex" does not compile: ${(err as Error).message}`);
      }
      const unsafe = unsafePatternReason(raw.regex);
      if (unsafe) throw badRequest(`${where}: "regex" is refused because it ${unsafe} (it could hang the server)`);
      rule.regex = raw.regex;
    }
    if (raw.enum !== undefined && raw.enum !== null) {
      if (!Array.isArray(raw.enum)) throw badRequest(`${where}: "enum" must be an array`);
      if (raw.enum.length === 0) throw badRequest(`${where}: "enum" must not be empty`);
      if (raw.enum.length > MAX_ENUM_VALUES) throw badRequest(`${where}: "enum" holds at most ${MAX_ENUM_VALUES} values`);
      rule.enum = raw.enum;
    }
    return rule;
  });
}
