import { AppError } from "../errors.ts";

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
