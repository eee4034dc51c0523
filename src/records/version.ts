import { AppError } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";

/**
 * Record versions (CONTRACT §15). A record's version is its `_updated_at`: every write of its row (update,
 * soft delete, restore) moves it strictly forward in the database (`bumpSql`), so two versions of one record
 * never share a value, even within one millisecond, and no column is added to existing tables.
 */

/** An `If-Match` precondition: `*` (any existing record) or the entity tags listed, without their quotes. */
export type IfMatch = "*" | readonly string[];

/** The `ETag` of a record: its version, quoted (a strong tag). */
export function etagOf(record: RecordJson): string {
  return `"${record._updated_at as number}"`;
}

/**
 * Reads an `If-Match` header: undefined without one, `*`, or the tags listed. A weak tag (`W/"…"`) or one
 * that is not quoted never matches (a precondition compares strongly), so it answers 412 like a stale one.
 */
export function parseIfMatch(header: string | null): IfMatch | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (value === "*") return "*";
  const tags: string[] = [];
  for (const part of value.split(",")) {
    const m = /^"([^"]*)"$/.exec(part.trim());
    if (m) tags.push(m[1]!);
  }
  return tags;
}

/** 412 `precondition_failed`: the record changed since the version the client names. */
export function preconditionFailed(): AppError {
  return new AppError(412, "precondition_failed", "the record has changed since the version in If-Match");
}

/**
 * Checks `ifMatch` against a record read in the write's transaction; throws 412 when it does not match. True when
 * the write must also find the row still at this version (the atomic check: see the store's `guard`).
 */
export function checkIfMatch(ifMatch: IfMatch | undefined, record: RecordJson): boolean {
  if (ifMatch === undefined || ifMatch === "*") return false;
  const version = String(record._updated_at);
  if (!ifMatch.includes(version)) throw preconditionFailed();
  return true;
}
