import type { Collection, FixedRule, Operation, RuleValue } from "../../catalog/types.ts";
import { badRequest, type AppError } from "../../errors.ts";
import { RuleError, type Node } from "./ast.ts";
import { checkExpression, type CheckedRule, type RuleCatalog, type Term } from "./check.ts";
import { parseExpression } from "./parser.ts";

// The entry points for a rule value as a collection stores it: a fixed word, a role, or an expression. Every
// kind becomes one CheckedRule, so the code that applies rules has one path: `owner` is `_owner_id = @auth.id`,
// `{ role: r }` is `@auth.roles ?= 'r'`, `authenticated` is `@auth.id != null`, `public` and `disabled` are the
// constants true and false.

const FIXED: ReadonlySet<string> = new Set(["public", "authenticated", "owner", "disabled"]);

/** True when a rule value is an expression (a string that is not one of the fixed words). Not a type guard: the fixed words are strings too. */
export function isExpressionRule(rule: RuleValue): boolean {
  return typeof rule === "string" && !FIXED.has(rule);
}

/** True for the fixed words. */
export function isFixedRule(rule: unknown): rule is FixedRule {
  return typeof rule === "string" && FIXED.has(rule);
}

/** Parsed rule texts (a rule is parsed at every catalog load that uses it; the texts are few). */
const parsed = new Map<string, Node | RuleError>();
const MAX_PARSED = 1000;

/** The tree of an expression; a RuleError names the first token that does not fit, with its position. */
export function parseRule(text: string): Node {
  let hit = parsed.get(text);
  if (hit === undefined) {
    try {
      hit = parseExpression(text);
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      hit = err;
    }
    if (parsed.size >= MAX_PARSED) parsed.clear();
    parsed.set(text, hit);
  }
  if (hit instanceof RuleError) throw hit;
  return hit;
}

/** The 400 for a rule of `op` that does not parse or check. */
export function invalidRule(op: string, err: RuleError): AppError {
  return badRequest(`invalid ${op} rule: ${err.message}`);
}

/** The checked form of a fixed word or a role rule (no catalog needed). */
export function fixedRule(collection: string, op: Operation, rule: FixedRule | { role: string }): CheckedRule {
  let term: Term;
  if (typeof rule === "object") term = { k: "cmp", op: "?=", a: { k: "auth", key: "roles" }, b: { k: "lit", v: rule.role } };
  else if (rule === "public") term = { k: "const", v: true };
  else if (rule === "disabled") term = { k: "const", v: false };
  else if (rule === "authenticated") term = { k: "null", a: { k: "auth", key: "id" }, not: true };
  else term = { k: "cmp", op: "=", a: { k: "field", scope: 0, hops: [], name: "_owner_id", type: "text" }, b: { k: "auth", key: "id" } };
  const readsAuth = rule !== "public" && rule !== "disabled";
  return { collection, op, term, names: [], ...(readsAuth ? { readsAuth: true as const } : {}) };
}

/**
 * Checks a rule value for `op` on `col` against the catalog; an expression that does not parse or check is a
 * RuleError (its message names the token and position). Fixed words and roles always pass.
 */
export function checkRuleValue(catalog: RuleCatalog, col: Collection, op: Operation, rule: RuleValue): CheckedRule {
  if (!isExpressionRule(rule)) return fixedRule(col.name, op, rule as FixedRule | { role: string });
  return checkExpression(catalog, col, op, parseRule(rule as string), (target) => ruleFor(catalog, target, "read"));
}

/** checkRuleValue answering 400 `invalid <op> rule: ...`: for the admin API and the CLI. */
export function checkRule(catalog: RuleCatalog, col: Collection, op: Operation, rule: RuleValue): CheckedRule {
  try {
    return checkRuleValue(catalog, col, op, rule);
  } catch (err) {
    if (err instanceof RuleError) throw invalidRule(op, err);
    throw err;
  }
}

/**
 * The checked rules of each catalog entry. An entry is replaced, never changed, when the catalog changes (a
 * reload makes every entry anew, relations included), so what was checked against it holds while it is used.
 */
const checked = new WeakMap<Collection, Partial<Record<Operation, CheckedRule>>>();

/**
 * The rule of `op` on `col`, checked against `catalog` once per catalog entry. A stored expression that no
 * longer checks (a relation or collection it names went away) denies everyone but admins: `broken` says why.
 */
export function ruleFor(catalog: RuleCatalog, col: Collection, op: Operation): CheckedRule {
  let byOp = checked.get(col);
  if (!byOp) checked.set(col, (byOp = {}));
  let rule = byOp[op];
  if (!rule) {
    try {
      rule = checkRuleValue(catalog, col, op, col.rules[op]);
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      // IMPORTANT: fail closed: a rule that cannot be read allows nothing.
      rule = { collection: col.name, op, term: { k: "const", v: false }, names: [], broken: err.message };
    }
    byOp[op] = rule;
  }
  return rule;
}

/** The rule of `op` on `col` as ruleFor checked it, without a catalog: undefined where it was not checked yet (rules/scope.ts prepareRules checks them). */
export function checkedRuleOf(col: Collection, op: Operation): CheckedRule | undefined {
  return checked.get(col)?.[op];
}
