import { badRequest } from "../errors.ts";
import { MAX_REGEX_VALUE_LENGTH, matchesPattern, patternError } from "./regex.ts";
import { isValidFieldName, type FieldRule } from "../catalog/types.ts";
import type { FieldError } from "../errors.ts";
import type { Collection } from "../catalog/types.ts";

/** Longest `regex` a field rule may carry (RE2's compile cost and memory grow with the pattern). */
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
    if (rule.regex !== undefined && typeof v === "string") {
      // IMPORTANT: the value is capped too, so one request cannot buy unbounded matching time.
      if (charLength(v) > MAX_REGEX_VALUE_LENGTH)
        errors.push({
          field: f,
          rule: "regex",
          message: `"${f}" is longer than ${MAX_REGEX_VALUE_LENGTH} characters, the most a pattern is checked on.`,
        });
      else if (!matchesPattern(rule.regex, v))
        errors.push({ field: f, rule: "regex", message: `"${f}" must match the pattern ${rule.regex}.` });
    }
    if (rule.enum !== undefined && !rule.enum.some((e) => sameValue(e, v)))
      errors.push({
        field: f,
        rule: "enum",
        message: `"${f}" must be one of: ${rule.enum.map((e) => JSON.stringify(e)).join(", ")}.`,
      });
  }
  return errors;
}

const RULE_KEYS = new Set(["field", "required", "min", "max", "regex", "enum"]);

/**
 * Checks a `field_rules` list as given to PUT …/rules or collection create; 400 naming the
 * first problem (unknown key, wrong type, regex that RE2 cannot compile or over 256 characters, min > max,
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
      if (raw.regex.length > MAX_REGEX_LENGTH) throw badRequest(`${where}: "regex" is longer than ${MAX_REGEX_LENGTH} characters`);
      const error = patternError(raw.regex);
      if (error)
        throw badRequest(
          `${where}: "regex" does not compile on the RE2 engine (no backreferences or lookaround): ${error}`,
        );
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
