import { newUlid } from "../ids.ts";
import type { AppContext } from "../context.ts";
import { AppError, badRequest, notFound } from "../errors.ts";
import { checkPassword, emailKey, hashPassword, normalizeEmail, type HashFor } from "./passwords.ts";
import { insertUser, userByEmail, userById, type UserRow } from "../tables/users.ts";

export type { UserRow } from "../tables/users.ts";

/** The public user object of CONTRACT §7. */
export interface UserJson {
  id: string;
  email: string;
  is_verified: boolean;
  roles: string[];
  metadata: Record<string, unknown>;
  created_at: number;
}

export function userToJson(u: UserRow): UserJson {
  return {
    id: u.id,
    email: u.email,
    is_verified: !!u.is_verified,
    roles: JSON.parse(u.roles),
    metadata: JSON.parse(u.metadata),
    created_at: u.created_at,
  };
}

export async function findUserById(ctx: AppContext, id: string): Promise<UserRow | null> {
  return await userById(ctx.db, id);
}

export async function findUserByEmail(ctx: AppContext, email: string): Promise<UserRow | null> {
  return await userByEmail(ctx.db, emailKey(email));
}

/** Finds a user by id or email; 404 when none. */
export async function requireUser(ctx: AppContext, idOrEmail: string): Promise<UserRow> {
  const u = idOrEmail.includes("@") ? await findUserByEmail(ctx, idOrEmail) : await findUserById(ctx, idOrEmail);
  if (!u) throw notFound("user not found");
  return u;
}

export const ROLES_MESSAGE = "roles must be an array of role names (letters, digits, _ . : -, up to 64 characters)";

/** Validates a roles array (strings of 1..64 safe characters). */
export function checkRoles(roles: unknown): string[] {
  if (!Array.isArray(roles) || roles.some((r) => typeof r !== "string" || !/^[A-Za-z0-9_.:-]{1,64}$/.test(r))) throw badRequest(ROLES_MESSAGE);
  return [...new Set(roles as string[])];
}

/** Measures nesting: `{a:{b:{c:1}}}` is 3 levels. */
function depthOf(v: unknown): number {
  if (v === null || typeof v !== "object") return 0;
  let max = 0;
  for (const x of Object.values(v as Record<string, unknown>)) max = Math.max(max, depthOf(x));
  return 1 + max;
}

/** Validates user metadata (SPEC §7/§8): an object, at most 65,536 bytes serialized, at most 3 levels deep. */
export function checkMetadata(metadata: unknown): Record<string, unknown> {
  if (!metadata || typeof metadata !== "object" || Array.isArray(metadata))
    throw badRequest("metadata must be a JSON object");
  const size = Buffer.byteLength(JSON.stringify(metadata));
  if (size > 65_536) throw badRequest(`metadata is too large: ${size} bytes serialized, the limit is 65536`);
  const depth = depthOf(metadata);
  if (depth > 3) throw badRequest(`metadata is nested too deeply: ${depth} levels, the limit is 3`);
  return metadata as Record<string, unknown>;
}

export interface NewUser {
  email: unknown;
  password?: unknown;
  roles?: unknown;
  metadata?: unknown;
  isVerified?: boolean;
  /** The client address whose hashing turn the password takes; null (the default) for an admin's request. */
  hashFor?: HashFor;
}

/** Creates a user; 422 for a bad email or password, 409 `conflict` for a taken email. */
export async function createUser(ctx: AppContext, input: NewUser): Promise<UserRow> {
  const email = normalizeEmail(input.email);
  const password = input.password === undefined || input.password === null ? null : checkPassword(input.password);
  const roles = input.roles === undefined ? [] : checkRoles(input.roles);
  const metadata = input.metadata === undefined ? {} : checkMetadata(input.metadata);
  // A taken address is answered before the hash: it costs no hashing turn (many at once are 409, not 429).
  if (await findUserByEmail(ctx, email)) throw new AppError(409, "conflict", "a user with this email already exists");
  const passwordHash = password === null ? null : await hashPassword(password, input.hashFor ?? null);
  const now = ctx.clock.now();
  const id = newUlid(now);
  try {
    await insertUser(ctx.db, { id, email, passwordHash, verified: !!input.isVerified, roles: JSON.stringify(roles), metadata: JSON.stringify(metadata), now });
  } catch (err) {
    throw emailConflictOf(err);
  }
  return (await findUserById(ctx, id))!;
}

/**
 * A write of a user's email that broke the unique index (another request took the address since it was
 * looked up) as 409 `conflict`, the answer for a taken email (CONTRACT §8b); any other error as it is.
 */
export function emailConflictOf(err: unknown): unknown {
  return err instanceof AppError && err.code === "unique_violation" ? new AppError(409, "conflict", "a user with this email already exists") : err;
}
