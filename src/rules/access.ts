import type { Principal } from "../principal.ts";
import type { Collection, Operation } from "../catalog/types.ts";
import { AppError, forbidden, unauthorized } from "../errors.ts";
import { isExpressionRule } from "./expr/rule.ts";

/** "all": every record; "own": only records whose `_owner_id` is the requester. */
export type Access = "all" | "own";

/**
 * Applies a collection's rule for an operation to a principal (SPEC 2.2, CONTRACT §1):
 * anonymous where a user is needed → 401; rule denies → 403; `owner` → "own" (the caller
 * filters or checks the record). Admin credentials pass every rule; an expression rule
 * passes no one else (403).
 */
export function checkAccess(col: Collection, op: Operation, p: Principal): Access {
  const access = accessOf(col, op, p);
  if (access) return access;
  const rule = col.rules[op];
  if (rule === "disabled") throw forbidden(`"${op}" is disabled on collection "${col.name}"`);
  if (isExpressionRule(rule)) throw forbidden(`"${op}" on collection "${col.name}" is not allowed by its rule`);
  if (p.kind !== "user") throw unauthorized(`"${op}" on collection "${col.name}" requires authentication`);
  throw forbidden(`"${op}" on collection "${col.name}" requires the role "${(rule as { role: string }).role}"`);
}

/**
 * What checkAccess answers, or null where it would refuse, without building the error: for checks
 * repeated per reader (a realtime event goes through the read rule of every stream that follows it).
 */
export function accessOf(col: Collection, op: Operation, p: Principal): Access | null {
  if (p.kind === "admin") return "all";
  const rule = col.rules[op];
  // IMPORTANT: an expression rule (CONTRACT §12) is not evaluated on this path, so it lets no one but admins
  // through: a record is never shown or changed under a rule that was not applied (fail closed).
  if (isExpressionRule(rule)) return null;
  if (rule === "public") return "all";
  if (rule === "disabled" || p.kind !== "user") return null;
  if (rule === "authenticated") return "all";
  if (rule === "owner") return "own";
  return typeof rule === "object" && p.roles.includes(rule.role) ? "all" : null;
}

/** True when the principal owns the record. */
export function ownsRecord(p: Principal, record: { _owner_id?: unknown }): boolean {
  return p.kind === "user" && record._owner_id === p.userId;
}

export const recordNotFound = () => new AppError(404, "not_found", "record not found");
