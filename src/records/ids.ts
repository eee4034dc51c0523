import { monotonicFactory } from "ulid";

const next = monotonicFactory();

/** A new record id: a ULID, strictly increasing within this process even inside one millisecond. */
export function newRecordId(now: number): string {
  return next(now);
}
