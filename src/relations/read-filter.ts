import type { Principal } from "../auth/principal.ts";
import type { Collection } from "../collections/types.ts";
import { checkAccess } from "../rules/access.ts";

/** A SQL condition on a target collection's rows, with its bound values. */
export interface TargetFilter {
  sql: string;
  params: string[];
}

/**
 * How the requester may read a relation's target collection: null when its read rule hides it
 * entirely, else the condition a row must meet (active, and owned under an `owner` rule).
 * `alias` prefixes the columns (e.g. "t.").
 */
export function readFilter(target: Collection, p: Principal, alias = ""): TargetFilter | null {
  let access;
  try {
    access = checkAccess(target, "read", p);
  } catch {
    return null;
  }
  const deleted = `${alias}"_deleted_at" IS NULL`;
  if (access === "all") return { sql: deleted, params: [] };
  return { sql: `${deleted} AND ${alias}"_owner_id" = ?`, params: [p.kind === "user" ? p.userId : ""] };
}
