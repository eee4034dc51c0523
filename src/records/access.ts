import type { Principal } from "../principal.ts";
import type { Collection, Operation } from "../catalog/types.ts";
import { forbidden } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";
import { accessOf, checkAccess, ownsRecord, recordNotFound, type Access } from "../rules/access.ts";

/** True when the principal may read this record under the collection's read rule. */
export function canRead(col: Collection, p: Principal, record: RecordJson): boolean {
  // No exception for a refusal: this runs per stream per realtime event.
  const access = accessOf(col, "read", p);
  return access === "all" || (access === "own" && ownsRecord(p, record));
}

/**
 * Applies the collection's decision (`access`, from the update or delete rule) to a fetched record for
 * update/delete/restore. A record the requester may not read is 404 whatever that rule allows (CONTRACT
 * §1): its existence stays hidden, and the answer, the record itself, would show it. A readable one that an
 * `owner`-type rule keeps from the requester is 403.
 */
export function checkRecordAccess(col: Collection, op: Operation, p: Principal, access: Access, record: RecordJson): void {
  if (!canRead(col, p, record)) throw recordNotFound();
  if (access === "all" || ownsRecord(p, record)) return;
  throw forbidden(`only the owner may ${op} this record`);
}
