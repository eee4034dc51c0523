import type { Principal } from "../principal.ts";
import type { Collection, Operation } from "../catalog/types.ts";
import type { Cond } from "../db/condition.ts";
import { AppError, forbidden, unauthorized } from "../errors.ts";
import type { CheckedRule } from "./expr/check.ts";
import { compileRule, readsAuth, type RuleAuth, type RuleEnv } from "./expr/compile.ts";
import { checkedRuleOf, isExpressionRule } from "./expr/rule.ts";

/**
 * "all": every record; "own": only records whose `_owner_id` is the requester; a RuleAccess: the records an
 * expression rule lets through (CONTRACT §12), as a condition on the collection's rows.
 */
export type Access = "all" | "own" | RuleAccess;

/** An expression rule applied to one caller: the checked rule, what the request gives it, and its condition on the collection's table. */
export interface RuleAccess {
  readonly rule: CheckedRule;
  readonly env: RuleEnv;
  /** compileRule(rule, env) over the collection's quoted table: never TRUE or FALSE (those are "all" and a refusal). */
  readonly cond: Cond;
}

/** The user as rules see them, made once per principal (a user's principal is made per request, or per realtime batch). */
const ruleUsers = new WeakMap<Principal, RuleAuth>();

/**
 * The caller as a rule sees them: for a user, the roles, metadata, address and verification the principal
 * read from the user's row at the request (not the token's copy); null for anonymous callers.
 */
export function ruleUserOf(p: Principal): RuleAuth | null {
  if (p.kind !== "user") return null;
  let auth = ruleUsers.get(p);
  if (!auth) ruleUsers.set(p, (auth = { id: p.userId, email: p.email, verified: p.verified, roles: p.roles, metadata: p.metadata }));
  return auth;
}

/**
 * Applies a collection's rule for an operation to a principal (SPEC 2.2, CONTRACT §1, §12):
 * anonymous where a user is needed → 401; rule denies → 403; `owner` → "own" (the caller
 * filters or checks the record); an expression → the condition a record must meet, or a refusal
 * where it holds for no record at all for this caller. Admin credentials pass every rule.
 */
export function checkAccess(col: Collection, op: Operation, p: Principal, body?: Readonly<Record<string, unknown>> | null): Access {
  const access = accessOf(col, op, p, body);
  if (access) return access;
  const rule = col.rules[op];
  if (rule === "disabled") throw forbidden(`"${op}" is disabled on collection "${col.name}"`);
  if (isExpressionRule(rule)) throw expressionRefusal(col, op, p);
  if (p.kind !== "user") throw unauthorized(`"${op}" on collection "${col.name}" requires authentication`);
  throw forbidden(`"${op}" on collection "${col.name}" requires the role "${(rule as { role: string }).role}"`);
}

/**
 * The error of an expression rule that refuses the caller: 403 (CONTRACT §12), or 401 to an anonymous caller where
 * the rule reads `@auth` (signing in may change its answer); one that does not read `@auth` refuses everyone alike.
 */
export function expressionRefusal(col: Collection, op: Operation, p: Principal): AppError {
  const rule = checkedRuleOf(col, op);
  if (p.kind !== "user" && rule && readsAuth(rule)) return unauthorized(`"${op}" on collection "${col.name}" requires authentication`);
  return forbidden(`"${op}" on collection "${col.name}" is not allowed by its rule`);
}

/**
 * checkAccess for an operation on one stored record (update, delete, restore): where an expression rule
 * refuses the caller whatever the record, null, and the refusal waits until the record is read, to be 404
 * where the caller may not read it and expressionRefusal's otherwise (CONTRACT §12; see checkRecordAccess).
 */
export function recordOpAccess(col: Collection, op: Operation, p: Principal, body?: Readonly<Record<string, unknown>> | null): Access | null {
  return isExpressionRule(col.rules[op]) ? accessOf(col, op, p, body) : checkAccess(col, op, p, body);
}

/**
 * What checkAccess answers, or null where it would refuse, without building the error: for checks
 * repeated per reader (a realtime event goes through the read rule of every stream that follows it).
 * `body`: the request body, for `@request.body` in create and update rules.
 */
export function accessOf(col: Collection, op: Operation, p: Principal, body?: Readonly<Record<string, unknown>> | null): Access | null {
  if (p.kind === "admin") return "all";
  const rule = col.rules[op];
  if (isExpressionRule(rule)) return expressionAccess(col, op, p, body ?? null);
  if (rule === "public") return "all";
  if (rule === "disabled" || p.kind !== "user") return null;
  if (rule === "authenticated") return "all";
  if (rule === "owner") return "own";
  return typeof rule === "object" && p.roles.includes(rule.role) ? "all" : null;
}

/** An expression rule for a caller: "all" where it holds for every record, null where for none. */
function expressionAccess(col: Collection, op: Operation, p: Principal, body: Readonly<Record<string, unknown>> | null): Access | null {
  const rule = checkedRuleOf(col, op);
  const auth = ruleUserOf(p);
  // IMPORTANT: fail closed: a rule not checked against the catalog reading it belongs to passes no one.
  if (!rule) return null;
  if (body && rule.bodyFields && operatesOnBodyField(body, rule.bodyFields)) return null;
  const env: RuleEnv = { auth, now: Date.now(), body };
  const cond = compileRule(rule, env);
  if (cond.k === "true") return "all";
  if (cond.k === "false") return null;
  return { rule, env, cond };
}

/**
 * SECURITY: true when the body changes, by an atomic operator (`"n+": 5`, `"tags-": [..]`), a field the rule reads
 * as `@request.body.<field>`. The rule sees the values sent under the field's own name; an operator's result is not
 * one of them, so `"credits+": 1000000` would pass a rule meant to keep `credits` from being set: denied instead.
 */
function operatesOnBodyField(body: Readonly<Record<string, unknown>>, fields: readonly string[]): boolean {
  for (const key in body) {
    const last = key.charCodeAt(key.length - 1);
    if ((last === 43 || last === 45) && fields.includes(key.slice(0, -1).toLowerCase())) return true;
  }
  return false;
}

/** True when the principal owns the record. */
export function ownsRecord(p: Principal, record: { _owner_id?: unknown }): boolean {
  return p.kind === "user" && record._owner_id === p.userId;
}

export const recordNotFound = () => new AppError(404, "not_found", "record not found");
