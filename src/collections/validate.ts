import { badRequest } from "../errors.ts";
import { isValidFieldName, type FieldRule } from "./types.ts";
import type { FieldError } from "../errors.ts";
import type { Collection } from "./types.ts";

/**
 * Checks a record's values against the collection's field rules (SPEC 2.3, CONTRACT §4).
 * `mode` "create": `required` fails on missing or null; "update": only on null.
 */
export function validateFieldRules(
  _col: Collection,
  _data: Record<string, unknown>,
  _mode: "create" | "update",
): FieldError[] {
  return [];
}

const RULE_KEYS = new Set(["field", "required", "min", "max", "regex", "enum"]);

/** Checks a `field_rules` list as given to PUT …/rules; 400 naming the first problem. */
export function parseFieldRules(input: unknown): FieldRule[] {
  if (!Array.isArray(input)) throw badRequest("field_rules must be an array");
  return input.map((r, i) => {
    const where = `field_rules[${i}]`;
    if (!r || typeof r !== "object" || Array.isArray(r)) throw badRequest(`${where} must be an object`);
    for (const k of Object.keys(r)) if (!RULE_KEYS.has(k)) throw badRequest(`${where}: unknown key "${k}"`);
    const rule = r as FieldRule;
    if (typeof rule.field !== "string" || !isValidFieldName(rule.field)) throw badRequest(`${where}: "field" must be a valid field name`);
    return rule;
  });
}
