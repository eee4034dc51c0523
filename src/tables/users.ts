import { listParam } from "../db/condition.ts";
import type { Engine } from "../db/engine.ts";

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

/** Which of these users exist: one query for all. */
export async function existingUserIds(db: Engine, ids: readonly string[]): Promise<string[]> {
  if (!ids.length) return [];
  return (await db.all<{ id: string }>(`SELECT id FROM _users WHERE id ${db.sql.inList}`, [listParam(ids)])).map((r) => r.id);
}

/** Deletes a user; its sessions, refresh tokens, API keys, mail tokens, recovery codes and OAuth links go with it (foreign keys). */
export async function deleteUserRow(db: Engine, id: string): Promise<void> {
  await db.run("DELETE FROM _users WHERE id = ?", [id]);
}
