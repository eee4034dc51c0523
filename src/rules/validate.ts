import { badRequest } from "../errors.ts";
import { OPERATIONS, type Operation, type RuleValue, type Rules } from "../catalog/types.ts";

const SIMPLE = new Set(["public", "authenticated", "owner", "disabled"]);

/** Checks one rule value; throws 400 naming the operation when it is not a valid rule. */
export function parseRuleValue(op: string, v: unknown): RuleValue {
  if (typeof v === "string" && SIMPLE.has(v)) return v as RuleValue;
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const role = (v as { role?: unknown }).role;
    if (keys.length === 1 && typeof role === "string" && /^[A-Za-z0-9_.:-]{1,64}$/.test(role)) return { role };
  }
  throw badRequest(
    `invalid ${op} rule: expected "public", "authenticated", "owner", "disabled" or { "role": "<name>" }`,
  );
}

/** Validates a (possibly partial) rules object; unknown keys are 400. Returns `base` with the given keys replaced. */
export function mergeRules(base: Rules, input: unknown): Rules {
  if (input === undefined) return { ...base };
  if (!input || typeof input !== "object" || Array.isArray(input)) throw badRequest("rules must be an object");
  const out: Rules = { ...base };
  for (const [k, v] of Object.entries(input)) {
    if (!OPERATIONS.includes(k as Operation)) throw badRequest(`unknown rule "${k}": expected read, create, update or delete`);
    out[k as Operation] = parseRuleValue(k, v);
  }
  return out;
}
