import type { Engine } from "../db/engine.ts";

// The `_oauth_states` table (pending OAuth logins, their state and cookie kept hashed): its SQL is written here.

/** A pending login as stored. */
export interface OAuthStateStored {
  provider: string;
  code_verifier: string;
  nonce: string | null;
  cookie_hash: string;
  expires_at: number;
}

/** Forgets the states expired at `now`. */
export async function pruneOAuthStates(db: Engine, now: number): Promise<void> {
  await db.run("DELETE FROM _oauth_states WHERE expires_at <= ?", [now]);
}

/** Stores a pending login. */
export async function insertOAuthState(
  db: Engine,
  s: { stateHash: string; provider: string; codeVerifier: string; nonce: string; cookieHash: string; now: number; expiresAt: number },
): Promise<void> {
  await db.run("INSERT INTO _oauth_states (state_hash, provider, code_verifier, nonce, cookie_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
    s.stateHash, s.provider, s.codeVerifier, s.nonce, s.cookieHash, s.now, s.expiresAt,
  ]);
}

/** Takes the state of that hash out of the store (single use: deleted whatever follows); null when unknown. */
export async function takeOAuthState(db: Engine, stateHash: string): Promise<OAuthStateStored | null> {
  return await db.get<OAuthStateStored>("DELETE FROM _oauth_states WHERE state_hash = ? RETURNING provider, code_verifier, nonce, cookie_hash, expires_at", [stateHash]);
}
