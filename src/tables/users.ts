import { listParam } from "../db/condition.ts";
import type { Engine } from "../db/engine.ts";
import { getMeta } from "../db/meta.ts";

// The `_users` table: the SQL that reads or writes it is written here (and only here).

/** The columns of a user that a request acts with: rules read them as stored at the request (CONTRACT §12). */
export interface UserAccessRow {
  roles: string;
  metadata: string;
  email: string;
  is_verified: number | boolean;
}

/** A user as a request acts with them, read from the row (not from the token's copy). */
export interface UserAccess {
  roles: string[];
  metadata: Readonly<Record<string, unknown>>;
  email: string;
  verified: boolean;
}

/** The select list of UserAccessRow, for a query that joins `_users` as `u`. */
export const ACCESS_COLUMNS = "u.roles, u.metadata, u.email, u.is_verified";

/**
 * A statement that reads the access columns of the user whose id is the SQL expression `userId` beside a row of
 * another table, as each engine reads them best (Dialect.userAccess), built once per dialect: `build` gets the
 * select list and what joins the user, to put after the table. `email` is null only when there is no such user.
 */
export function accessStatement(userId: string, build: (columns: string, join: string) => string): (db: Engine) => string {
  const built = new WeakMap<Engine["sql"], string>();
  return (db) => {
    let sql = built.get(db.sql);
    if (sql === undefined) {
      const access = db.sql.userAccess(userId);
      built.set(db.sql, (sql = build(access.columns, access.join)));
    }
    return sql;
  };
}

const NO_METADATA: Readonly<Record<string, unknown>> = Object.freeze({});

/** Reads the stored roles (a JSON array of names) and metadata (a JSON object); a damaged value reads as none. */
export function accessOf(row: UserAccessRow): UserAccess {
  return { roles: parseRoles(row.roles), metadata: parseMetadata(row.metadata), email: row.email, verified: !!row.is_verified };
}

export function parseRoles(text: string): string[] {
  if (text === "[]") return [];
  try {
    const list: unknown = JSON.parse(text);
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}

export function parseMetadata(text: string): Readonly<Record<string, unknown>> {
  if (text === "{}") return NO_METADATA;
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : NO_METADATA;
  } catch {
    return NO_METADATA;
  }
}

/** The access columns of one user, or null when there is no such user. */
export async function userAccessRow(db: Engine, id: string): Promise<UserAccessRow | null> {
  return await db.get<UserAccessRow>(`SELECT ${ACCESS_COLUMNS} FROM _users u WHERE u.id = ?`, [id]);
}

/** The access columns of each of these users that exists, with its id: one query for all. */
export async function usersAccessRows(db: Engine, ids: readonly string[]): Promise<(UserAccessRow & { id: string })[]> {
  if (!ids.length) return [];
  return await db.all<UserAccessRow & { id: string }>(`SELECT u.id, ${ACCESS_COLUMNS} FROM _users u WHERE u.id ${db.sql.inList}`, [listParam(ids)]);
}

/**
 * A number that changes whenever any user's access columns change or a user is deleted (a trigger keeps it, see
 * migrations/0012_users_access_version.sql), so access read after it was read may be kept until it changes. Read
 * it before the rows it vouches for: a change committed between the two reads makes the next reading differ.
 */
export async function usersAccessVersion(db: Engine): Promise<string> {
  // getMeta binds the key: PostgreSQL then keeps the statement prepared (a literal is parsed and planned each time).
  return (await getMeta(db, "users_access_version")) ?? "0";
}

const CREDENTIALS_VERSION_SQL = "SELECT (SELECT value FROM _meta WHERE key = ?) AS a, (SELECT value FROM _meta WHERE key = ?) AS c";

/**
 * The users' access version (above) with a second number, which triggers move whenever a session or an API key is
 * revoked or deleted (migration 0017_credentials_version), read together: a credential's check read after it may be
 * kept until it changes. Read it before the rows it vouches for.
 */
export async function credentialsVersion(db: Engine): Promise<string> {
  const row = await db.get<{ a: string | null; c: string | null }>(CREDENTIALS_VERSION_SQL, ["users_access_version", "credentials_version"]);
  return `${row?.a ?? "0"}/${row?.c ?? "0"}`;
}

/** Which of these users exist: one query for all. */
export async function existingUserIds(db: Engine, ids: readonly string[]): Promise<string[]> {
  if (!ids.length) return [];
  return (await db.all<{ id: string }>(`SELECT id FROM _users WHERE id ${db.sql.inList}`, [listParam(ids)])).map((r) => r.id);
}

/** A user row as stored. */
export interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  is_verified: number;
  roles: string;
  metadata: string;
  totp_secret: string | null;
  totp_enabled: number;
  totp_last_step: number | null;
  created_at: number;
  updated_at: number;
}

/** The user of that id, or null. */
export async function userById(db: Engine, id: string): Promise<UserRow | null> {
  return await db.get<UserRow>("SELECT * FROM _users WHERE id = ?", [id]);
}

/** The user of that stored (normalised) address, or null. */
export async function userByEmail(db: Engine, email: string): Promise<UserRow | null> {
  return await db.get<UserRow>("SELECT * FROM _users WHERE email = ?", [email]);
}

/** Stores a new user; roles and metadata as JSON text. A taken address breaks the unique index (unique_violation). */
export async function insertUser(
  db: Engine,
  u: { id: string; email: string; passwordHash: string | null; verified: boolean; roles: string; metadata: string; now: number },
): Promise<void> {
  await db.run(`INSERT INTO _users (id, email, password_hash, is_verified, roles, metadata, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [u.id, u.email, u.passwordHash, u.verified ? 1 : 0, u.roles, u.metadata, u.now, u.now]);
}

/** The columns an admin may change, with their new stored values (roles and metadata as JSON text). */
export interface UserChanges {
  roles?: string;
  metadata?: string;
  is_verified?: number;
  email?: string;
  password_hash?: string;
}

const CHANGEABLE = ["roles", "metadata", "is_verified", "email", "password_hash"] as const;

/** Writes the given columns of a user (and updated_at). The column names come from CHANGEABLE only. */
export async function updateUserColumns(db: Engine, id: string, changes: UserChanges, now: number): Promise<void> {
  const sets: string[] = [];
  const values: (string | number)[] = [];
  for (const c of CHANGEABLE) {
    const v = changes[c];
    if (v !== undefined) sets.push(`${c} = ?`), values.push(v);
  }
  await db.run(`UPDATE _users SET ${[...sets, "updated_at = ?"].join(", ")} WHERE id = ?`, [...values, now, id]);
}

/** Users whose address matches the LIKE pattern `pattern` (its wildcards escaped with `\`): how many, and one page newest first. */
export async function searchUserRows(db: Engine, pattern: string, limit: number, offset: number): Promise<{ total: number; rows: UserRow[] }> {
  const where = `WHERE ${db.sql.escapedLike("email")}`;
  const total = (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM _users ${where}`, [pattern]))!.n;
  const rows = await db.all<UserRow>(`SELECT * FROM _users ${where} ORDER BY created_at DESC, ${db.sql.insertOrder} DESC LIMIT ? OFFSET ?`, [pattern, limit, offset]);
  return { total, rows };
}

/** Deletes a user; its sessions, refresh tokens, API keys, mail tokens, recovery codes and OAuth links go with it (foreign keys). */
export async function deleteUserRow(db: Engine, id: string): Promise<void> {
  await db.run("DELETE FROM _users WHERE id = ?", [id]);
}

/** Replaces a user's metadata (JSON text). */
export async function setUserMetadata(db: Engine, id: string, metadata: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET metadata = ?, updated_at = ? WHERE id = ?", [metadata, now, id]);
}

/** Sets a user's password hash; the address and whether it is verified, or null when there is no such user. */
export async function setUserPassword(db: Engine, id: string, hash: string, now: number): Promise<{ email: string; is_verified: number } | null> {
  return await db.get<{ email: string; is_verified: number }>("UPDATE _users SET password_hash = ?, updated_at = ? WHERE id = ? RETURNING email, is_verified", [hash, now, id]);
}

/** Marks a user's address verified. */
export async function markUserVerified(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET is_verified = TRUE, updated_at = ? WHERE id = ?", [now, id]);
}

/** Marks a never-verified user verified and drops their password; false when the user was verified already (or is gone). */
export async function claimUnverifiedUser(db: Engine, id: string, now: number): Promise<boolean> {
  return (await db.run("UPDATE _users SET is_verified = TRUE, password_hash = NULL, updated_at = ? WHERE id = ? AND is_verified = FALSE", [now, id])).changes > 0;
}

/** Stores a new (encrypted) TOTP secret, not yet enabled. */
export async function setTotpSecret(db: Engine, id: string, encrypted: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET totp_secret = ?, totp_last_step = NULL, updated_at = ? WHERE id = ?", [encrypted, now, id]);
}

/** Turns TOTP on for a user whose secret is stored. */
export async function turnTotpOn(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET totp_enabled = TRUE, updated_at = ? WHERE id = ?", [now, id]);
}

/** Turns TOTP off and forgets the secret. */
export async function turnTotpOff(db: Engine, id: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET totp_enabled = FALSE, totp_secret = NULL, totp_last_step = NULL, updated_at = ? WHERE id = ?", [now, id]);
}

/** Users by id, 500 at a time after `after` (`""` for the first page): their ids and stored addresses. */
export async function userEmailPage(db: Engine, after: string): Promise<{ id: string; email: string }[]> {
  return await db.all<{ id: string; email: string }>("SELECT id, email FROM _users WHERE id > ? ORDER BY id LIMIT 500", [after]);
}

/** Whether some user holds that stored address. */
export async function emailTaken(db: Engine, email: string): Promise<boolean> {
  return (await db.get("SELECT 1 FROM _users WHERE email = ?", [email])) !== null;
}

/** Replaces a user's stored address if it is still `from`. */
export async function moveUserEmail(db: Engine, id: string, from: string, to: string, now: number): Promise<void> {
  await db.run("UPDATE _users SET email = ?, updated_at = ? WHERE id = ? AND email = ?", [to, now, id, from]);
}
