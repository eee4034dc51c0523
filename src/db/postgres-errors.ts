import { AppError, ValidationError } from "../errors.ts";

interface PgErrorLike {
  code?: string;
  errno?: string;
  detail?: string;
  column?: string;
  constraint?: string;
}

/** The SQLSTATE of a PostgreSQL server error, else "". */
export function sqlState(err: unknown): string {
  return (err as PgErrorLike | null)?.errno ?? "";
}

/**
 * A serialization failure or deadlock, or a schema change that lost a race (two writers adding the same
 * column, table or index: the second waits for the first's lock, then finds it there): the whole
 * transaction may be run again, and then sees the winner's change. SQLite's single writer never races so.
 */
export function isRetryable(err: unknown): boolean {
  const state = sqlState(err);
  return state === "40001" || state === "40P01" || state === "42701" || state === "42P07" || state === "42710";
}

/**
 * True when the database cannot be reached: the connection was refused, closed or timed out, the
 * server is shutting down or starting, it has no connection slot left, or it refused the credentials
 * or the database name.
 */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const state = sqlState(err);
  if (state.startsWith("08") || state === "57P01" || state === "57P02" || state === "57P03" || state === "53300") return true;
  // Refused credentials or a database that does not exist: to a client of baas, the database is unreachable.
  if (state.startsWith("28") || state === "3D000") return true;
  if (state) return false;
  const code = (err as PgErrorLike).code ?? "";
  return /CONNECTION|ECONN|TIMEOUT|SOCKET|EPIPE|ENOTCONN|EHOSTUNREACH|ENETUNREACH|TLS/i.test(code);
}

/** Column names of a `Key (a, b)=(…)` detail; the values (which may be secrets) are never kept. */
function keyColumns(detail: string | undefined): string[] {
  const inner = /^Key \((.*?)\)=\(/.exec(detail ?? "")?.[1];
  if (!inner) return [];
  return inner
    .split(",")
    .map((c) => c.trim().replace(/^[a-z_]+\((.*)\)$/i, "$1").replace(/^"|"$/g, ""))
    .filter(Boolean);
}

/**
 * Maps a PostgreSQL error to the AppError the SQLite engine gives for the same mistake (unique violation
 * 409 with its fields; lost database 503 `unavailable`), or to a 4xx where it is the client's doing.
 * Anything else is returned unchanged (a 500).
 */
export function mapPostgresError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof AppError) return err;
  const e = err as Error & PgErrorLike;
  const state = sqlState(err);
  if (state === "23505") {
    const fields = keyColumns(e.detail);
    return new AppError(409, "unique_violation", `a record with the same ${fields.join(", ") || "value"} already exists`, {
      fields,
    });
  }
  if (state === "23503") {
    return new AppError(409, "conflict", "a related record is missing or still referenced", {}, {}, { cause: err });
  }
  if (state === "23502") {
    const field = e.column ?? "value";
    return new ValidationError([{ field, rule: "required", message: `"${field}" is required.` }]);
  }
  if (state === "23514") {
    const field = e.column ?? e.constraint ?? "value";
    return new ValidationError([{ field, rule: "check", message: `"${field}" is not allowed.` }]);
  }
  if (state === "42P01") {
    // A collection's table dropped by a transaction that committed while this one wrote to it (its drop takes
    // the table's lock only when it drops it): the collection is gone, as a request after the drop is told.
    return new AppError(404, "not_found", "collection not found", {}, {}, { cause: err });
  }
  if (state === "22021") {
    return new AppError(400, "bad_request", "a text value holds a NUL character (\\u0000), which cannot be stored", {}, {}, { cause: err });
  }
  if (state === "54000") {
    // A limit of the stored form that SQLite does not have: a text too large for a full-text vector
    // (1 MB) or for a btree index entry (about 2.7 kB).
    return new AppError(400, "bad_request", "a value is too large for the database to store or index", {}, {}, { cause: err });
  }
  if (state === "22003") {
    // A number past float8's range: what an atomic `n+` can make (a value sent is always a finite number). As
    // SQLite's engine answers it: 422 rule `type` (the field, when the caller knows it, see writeUpdate).
    return new ValidationError([{ field: e.column ?? "value", rule: "type", message: "a number would leave the range of a number." }]);
  }
  if (state.startsWith("22")) {
    return new AppError(400, "bad_request", "a value does not fit the type of its column", {}, {}, { cause: err });
  }
  if (state === "57014") {
    return new AppError(503, "unavailable", "the database did not answer in time, try again", {}, { "Retry-After": "1" }, { cause: err });
  }
  if (state === "53100") {
    return new AppError(507, "storage_full", "the database disk is full; the write was not saved", {}, {}, { cause: err });
  }
  if (isRetryable(err)) {
    return new AppError(503, "busy", "the database is busy, try again", {}, { "Retry-After": "1" }, { cause: err });
  }
  if (isUnavailable(err)) {
    return new AppError(503, "unavailable", "the database is unavailable, try again", {}, { "Retry-After": "1" }, { cause: err });
  }
  return err;
}
