import { AppError, ValidationError } from "../errors.ts";

/** Maps a SQLite error to an AppError where it is the client's doing; anything else is returned unchanged. */
export function mapSqliteError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof AppError) return err;
  const code = (err as { code?: string }).code ?? "";
  const msg = err.message;
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || /UNIQUE constraint failed/.test(msg)) {
    const cols = /UNIQUE constraint failed: (.*)$/.exec(msg)?.[1] ?? "";
    const fields = cols
      .split(",")
      .map((c) => c.trim().split(".").pop())
      .filter(Boolean);
    return new AppError(409, "unique_violation", `a record with the same ${fields.join(", ") || "value"} already exists`, {
      fields,
    });
  }
  // The same answers as the PostgreSQL engine gives for the same broken constraint (postgres-errors.ts).
  if (code === "SQLITE_CONSTRAINT_FOREIGNKEY" || /FOREIGN KEY constraint failed/.test(msg)) {
    return new AppError(409, "conflict", "a related record is missing or still referenced", {}, {}, { cause: err });
  }
  if (code === "SQLITE_CONSTRAINT_NOTNULL" || /NOT NULL constraint failed/.test(msg)) {
    const field = /NOT NULL constraint failed: (.*)$/.exec(msg)?.[1]?.split(".").pop() ?? "value";
    return new ValidationError([{ field, rule: "required", message: `"${field}" is required.` }]);
  }
  if (code === "SQLITE_BUSY" || /database is locked/.test(msg)) {
    return new AppError(503, "busy", "the database is busy, try again", {}, { "Retry-After": "1" }, { cause: err });
  }
  if (code === "SQLITE_FULL" || /database or disk is full/.test(msg)) {
    return new AppError(507, "storage_full", "the disk is full; the write was not saved", {}, {}, { cause: err });
  }
  if (code === "SQLITE_READONLY" || /readonly database/.test(msg)) {
    return new AppError(503, "read_only", "the data directory is read-only; the write was not saved", {}, {}, { cause: err });
  }
  return err;
}
