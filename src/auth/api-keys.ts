import { newUlid } from "../ids.ts";
import type { AppContext } from "../context.ts";
import { randomToken, sha256 } from "../crypto.ts";
import { AppError, badRequest, bodyOf, conflict, methodDisabled, notFound, type Checked } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import type { Principal } from "../principal.ts";
import { findUserById } from "../users/users.ts";
import { requireLiveCredential } from "./principal.ts";
import { requireVerifiedEmail } from "./verified.ts";
import { insertApiKey, liveApiKeyCount, revokeApiKeyRow, userApiKeyRows } from "../tables/api-keys.ts";

export interface ApiKeyJson {
  id: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

function userIdOf(p: Principal): string {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  return p.userId;
}

/** Active API keys a user may hold (each is a row kept, and listed whole by GET /auth/api-keys). */
export const MAX_API_KEYS = 100;

/** 401 when the user is gone, 403 `email_not_verified` while their address must be confirmed first. */
async function usableUser(ctx: AppContext, userId: string): Promise<void> {
  const user = await findUserById(ctx, userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  await requireVerifiedEmail(ctx, user);
}

/** `POST /auth/api-keys {name}`: a new key `baas_<32 random bytes>`; only its hash is kept, the value is shown once. */
export async function createApiKey(ctx: AppContext, p: Principal, input: Checked<{ name: string }>): Promise<{ id: string; name: string; key: string; created_at: number }> {
  const userId = userIdOf(p);
  if (!await getSetting(ctx, "auth_api_keys_enabled")) throw methodDisabled("API key creation");
  await usableUser(ctx, userId);
  const name = bodyOf(input).name.trim();
  if (!name) throw badRequest("name is required (a non-empty string)");
  if (name.length > 100) throw badRequest("name must be at most 100 characters");
  const key = `baas_${randomToken(32)}`;
  const hash = sha256(key);
  // SECURITY: the caller's session and address checked in the key's own transaction: a revocation of the
  // user's sessions and keys (logout-all, a password reset, the owner's claim) either committed before,
  // and this refuses, or commits after, and revokes this key too.
  return await ctx.db.transaction(async () => {
    await requireLiveCredential(ctx, p);
    await usableUser(ctx, userId);
    if ((await liveApiKeyCount(ctx.db, userId)) >= MAX_API_KEYS)
      throw conflict(`a user has at most ${MAX_API_KEYS} active API keys: revoke one before making another`);
    const now = ctx.clock.now();
    const id = newUlid(now);
    await insertApiKey(ctx.db, { id, userId, name, hash, now });
    return { id, name, key, created_at: now };
  });
}

/** `GET /auth/api-keys`: the user's active keys, oldest first, never their values. */
export async function listApiKeys(ctx: AppContext, p: Principal): Promise<{ items: ApiKeyJson[] }> {
  return { items: await activeApiKeysOf(ctx, userIdOf(p)) };
}

/** A user's active keys, oldest first, never their values (also what an admin sees). */
export async function activeApiKeysOf(ctx: AppContext, userId: string): Promise<ApiKeyJson[]> {
  return await userApiKeyRows(ctx.db, userId);
}

/** `DELETE /auth/api-keys/:id`: revokes one of the user's keys; another user's key is 404. */
export async function revokeApiKey(ctx: AppContext, p: Principal, id: string): Promise<{ ok: true }> {
  await revokeApiKeyOf(ctx, userIdOf(p), id);
  return { ok: true };
}

/** Revokes one active key of that user; 404 when the user has none of that id (another user's key included). */
export async function revokeApiKeyOf(ctx: AppContext, userId: string, id: string): Promise<void> {
  if (!await revokeApiKeyRow(ctx.db, id, userId, ctx.clock.now())) throw notFound("API key not found");
}
