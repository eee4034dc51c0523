import type { Collection } from "../catalog/types.ts";
import { badRequest } from "../errors.ts";
import { OPERATIONS, type Operation, type RuleValue, type Rules } from "../catalog/types.ts";
import { RuleError } from "./expr/ast.ts";
import type { RuleCatalog } from "./expr/check.ts";
import { checkRule, invalidRule, isFixedRule, parseRule } from "./expr/rule.ts";

/**
 * Checks one rule value; throws 400 naming the operation when it is not a valid rule. A string that is not one
 * of the fixed words is an expression (CONTRACT §12), checked here for what needs no catalog (syntax, limits);
 * checkRules checks its names against the catalog. The value is kept as given.
 */
export function parseRuleValue(op: string, v: unknown): RuleValue {
  if (typeof v === "string") {
    if (isFixedRule(v)) return v;
    try {
      parseRule(v);
    } catch (err) {
      if (err instanceof RuleError) throw invalidRule(op, err);
      throw err;
    }
    return v;
  }
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const role = (v as { role?: unknown }).role;
    if (keys.length === 1 && typeof role === "string" && /^[A-Za-z0-9_.:-]{1,64}$/.test(role)) return { role };
  }
  throw badRequest(
    `invalid ${op} rule: expected "public", "authenticated", "owner", "disabled", { "role": "<name>" } or an expression`,
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

/** The operations a rules input names (all four when it is absent from a new collection's body). */
export function rulesGiven(input: unknown): Operation[] {
  return input && typeof input === "object" ? OPERATIONS.filter((op) => op in input) : [];
}

/**
 * Checks the expression rules of `ops` on `col` against the catalog when they are set: an unknown field,
 * relation or collection, `@request.body` in a read or delete rule, a type mismatch: 400 naming the token and
 * its position.
 */
export function checkRules(catalog: RuleCatalog, col: Collection, rules: Rules, ops: readonly Operation[]): void {
  for (const op of ops) checkRule(catalog, col, op, rules[op]);
}
