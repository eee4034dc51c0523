import type { Engine } from "../db/engine.ts";

// The `_oauth_accounts` table (provider accounts linked to users): its SQL is written here.

/** A linked account as its user lists it. */
export interface LinkedAccountRow {
  provider: string;
  email: string | null;
  name: string | null;
  avatar_url: string | null;
  created_at: number;
}

/** Links a provider account to a user (an account linked already stays as it is). */
export async function insertOAuthAccount(
  db: Engine,
  a: { provider: string; providerUserId: string; userId: string; email: string | null; name: string | null; avatarUrl: string | null; now: number },
): Promise<void> {
  await db.run(`INSERT INTO _oauth_accounts (provider, provider_user_id, user_id, email, name, avatar_url, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, provider_user_id) DO NOTHING`, [a.provider, a.providerUserId, a.userId, a.email, a.name, a.avatarUrl, a.now]);
}

/** The user a provider account is linked to, or null. */
export async function linkedUserId(db: Engine, provider: string, providerUserId: string): Promise<string | null> {
  return (await db.get<{ user_id: string }>("SELECT user_id FROM _oauth_accounts WHERE provider = ? AND provider_user_id = ?", [provider, providerUserId]))?.user_id ?? null;
}

/** Refreshes what the provider says of a linked account (a missing email keeps the one stored). */
export async function updateOAuthAccount(db: Engine, provider: string, providerUserId: string, p: { name: string | null; avatarUrl: string | null; email: string | null }): Promise<void> {
  await db.run("UPDATE _oauth_accounts SET name = ?, avatar_url = ?, email = COALESCE(?, email) WHERE provider = ? AND provider_user_id = ?", [p.name, p.avatarUrl, p.email, provider, providerUserId]);
}

/** A user's linked accounts, oldest first. */
export async function userOAuthAccounts(db: Engine, userId: string): Promise<LinkedAccountRow[]> {
  return await db.all<LinkedAccountRow>("SELECT provider, email, name, avatar_url, created_at FROM _oauth_accounts WHERE user_id = ? ORDER BY created_at, provider", [userId]);
}

/** Removes a user's links to a provider; false when there were none. */
export async function deleteOAuthAccounts(db: Engine, userId: string, provider: string): Promise<boolean> {
  return (await db.run("DELETE FROM _oauth_accounts WHERE user_id = ? AND provider = ?", [userId, provider])).changes > 0;
}
