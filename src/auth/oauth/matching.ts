import type { AppContext } from "../../context.ts";
import { AppError } from "../../errors.ts";
import { getSetting } from "../../settings/settings.ts";
import { createUser, findUserByEmail, findUserById, type UserRow } from "../../users/users.ts";
import { normalizeEmail } from "../../users/passwords.ts";
import { claimUnverifiedAccount } from "../verification.ts";
import type { ProviderName, ProviderProfile } from "./providers.ts";
import { deleteOAuthAccounts, insertOAuthAccount, linkedUserId, updateOAuthAccount, userOAuthAccounts } from "../../tables/oauth-accounts.ts";

/** The `error=` reasons of an OAuth callback (SPEC 5.6, CONTRACT §7). */
export type OAuthFailure = "invalid_state" | "no_email" | "email_not_verified" | "registration_closed" | "provider_error" | "method_disabled";

/** A login that ends in `{APP_URL}/auth/callback?error=<reason>`. */
export class OAuthLoginError extends Error {
  override name = "OAuthLoginError";
  constructor(public reason: OAuthFailure, message: string = reason) {
    super(message);
  }
}

async function linkAccount(ctx: AppContext, provider: ProviderName, profile: ProviderProfile, userId: string, email: string | null): Promise<void> {
  await insertOAuthAccount(ctx.db, { provider, providerUserId: profile.id, userId, email, name: clip(profile.name), avatarUrl: clip(profile.avatarUrl), now: ctx.clock.now() });
}

function clip(v: string | null): string | null {
  return v === null ? null : v.slice(0, 2048);
}

/**
 * Finds or creates the user of a provider login, in SPEC 5.6's order: the linked account
 * for (provider, provider user id); else an existing user with the same email, linked
 * only when the provider says the address is verified; else a new email-verified user,
 * only while `registration_open` is true.
 */
export async function matchOAuthUser(ctx: AppContext, provider: ProviderName, profile: ProviderProfile): Promise<UserRow> {
  const linked = await linkedUserId(ctx.db, provider, profile.id);
  if (linked) {
    const user = await findUserById(ctx, linked);
    if (user) {
      await updateOAuthAccount(ctx.db, provider, profile.id, { name: clip(profile.name), avatarUrl: clip(profile.avatarUrl), email: profile.email?.slice(0, 254) ?? null });
      return user;
    }
  }
  if (!profile.email) throw new OAuthLoginError("no_email", "the provider gave no email address");
  let email: string;
  try {
    email = normalizeEmail(profile.email);
  } catch {
    throw new OAuthLoginError("no_email", "the provider gave no usable email address");
  }
  // IMPORTANT: an address the provider did not verify could belong to anyone; linking or
  // creating on it would let a stranger take over (or squat) that address's account.
  if (!profile.emailVerified) throw new OAuthLoginError("email_not_verified", "the provider has not verified this email address");
  const existing = await findUserByEmail(ctx, email);
  if (existing) return linkExisting(ctx, provider, profile, existing, email);
  if (!await getSetting(ctx, "registration_open")) throw new OAuthLoginError("registration_closed", "registration is closed");
  let user: UserRow;
  try {
    user = await createUser(ctx, { email, isVerified: true });
  } catch (err) {
    // Another login created the same address a moment ago: link to it instead.
    const raced = err instanceof AppError && err.status === 409 ? await findUserByEmail(ctx, email) : null;
    if (!raced) throw err;
    return await linkExisting(ctx, provider, profile, raced, email);
  }
  await linkAccount(ctx, provider, profile, user.id, email);
  return user;
}

async function linkExisting(ctx: AppContext, provider: ProviderName, profile: ProviderProfile, user: UserRow, email: string): Promise<UserRow> {
  await ctx.db.transaction(async () => {
    await linkAccount(ctx, provider, profile, user.id, email);
    // The provider has just proven the address belongs to this person: on a never-verified
    // account this drops whatever a pre-registration could have set up.
    await claimUnverifiedAccount(ctx, user.id);
  });
  return (await findUserById(ctx, user.id))!;
}

/** A linked account as listed for its user (SPEC 2.8). */
export interface LinkedAccountJson {
  provider: string;
  email: string | null;
  name: string | null;
  avatar_url: string | null;
  created_at: number;
}

/** `GET /auth/oauth/accounts`: the user's linked accounts, oldest first. */
export async function listLinkedAccounts(ctx: AppContext, userId: string): Promise<{ accounts: LinkedAccountJson[] }> {
  const accounts: LinkedAccountJson[] = await userOAuthAccounts(ctx.db, userId);
  return { accounts };
}

/** `DELETE /auth/oauth/:provider`: removes the user's links to that provider; 404 when there is none. */
export async function unlinkAccount(ctx: AppContext, userId: string, provider: ProviderName): Promise<{ ok: true }> {
  if (!await deleteOAuthAccounts(ctx.db, userId, provider)) throw new AppError(404, "not_found", `no ${provider} account is linked`);
  return { ok: true };
}
