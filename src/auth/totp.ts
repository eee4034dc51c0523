import type { TOTP } from "otpauth";
import type { AppContext } from "../context.ts";
import { hmacSha256, randomToken, sha256 } from "../crypto.ts";
import { getMeta, setMetaIfAbsent } from "../db/meta.ts";
import { AppError, badRequest, bodyOf, conflict, methodDisabled, type Checked } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserById, type UserRow } from "../users/users.ts";
import { clearLoginAttempts, takeLoginAttempt } from "./lockout.ts";
import { issueMailToken } from "./mail-tokens.ts";
import type { Principal } from "../principal.ts";
import { createSession, type ClientInfo, type SessionResponse } from "./sessions.ts";
import { requireLiveCredential } from "./principal.ts";
import { requireVerifiedEmail } from "./verified.ts";
import { deleteRecoveryCodes, insertRecoveryCode, useRecoveryCode } from "../tables/recovery-codes.ts";
import { countTokenAttempt, forgetTotpSteps, liveTotpToken, useToken, useTotpStep, useUserTokens } from "../tables/tokens.ts";
import { setTotpSecret, turnTotpOff, turnTotpOn } from "../tables/users.ts";

// node:crypto (its ciphers) is loaded at the first use: loading it costs every start-up several milliseconds.
const nodeCrypto = () => require("node:crypto") as typeof import("node:crypto");

export const TOTP_TOKEN_TTL_MS = 5 * 60 * 1000;
export const TOTP_MAX_ATTEMPTS = 5;
export const RECOVERY_CODE_COUNT = 10;
const PERIOD = 30;

const invalidCode = () => new AppError(400, "invalid_code", "invalid authentication code");
const badTotpToken = () => new AppError(401, "invalid_token", "invalid or expired totp_token");

/** The key that encrypts TOTP secrets and keys recovery-code hashes: generated once, kept in `_meta`. */
async function totpKey(ctx: AppContext): Promise<Buffer> {
  let key = ctx.cache.get("totp_key") as string | undefined;
  if (!key) {
    await setMetaIfAbsent(ctx.db, "totp_key", randomToken(32));
    key = (await getMeta(ctx.db, "totp_key"))!;
    ctx.cache.set("totp_key", key);
  }
  return Buffer.from(key, "base64url");
}

// The TOTP secret is stored encrypted (AES-256-GCM), so a copy of the users table alone does not yield codes.
async function encryptSecret(ctx: AppContext, base32: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = nodeCrypto().createCipheriv("aes-256-gcm", await totpKey(ctx), iv);
  const ct = Buffer.concat([c.update(base32, "utf8"), c.final()]);
  return `v1:${Buffer.concat([iv, c.getAuthTag(), ct]).toString("base64url")}`;
}

async function decryptSecret(ctx: AppContext, stored: string): Promise<string | null> {
  try {
    const raw = Buffer.from(stored.slice(3), "base64url");
    const d = nodeCrypto().createDecipheriv("aes-256-gcm", await totpKey(ctx), raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
  } catch {
    return null;
  }
}

/** otpauth is loaded when 2FA is first used, not at start. */
const otpauth = () => require("otpauth") as typeof import("otpauth");

async function totpFor(ctx: AppContext, user: UserRow, base32: string): Promise<TOTP> {
  const { Secret, TOTP } = otpauth();
  return new TOTP({
    issuer: await getSetting(ctx, "app_name"),
    label: user.email,
    algorithm: "SHA1",
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(base32),
  });
}

function normalizeRecoveryCode(code: string): string {
  return code.trim().toLowerCase().replace(/[\s-]/g, "");
}

// Recovery codes are stored as keyed hashes: the key lives apart from the codes, so a leaked table cannot be brute-forced.
async function hashRecoveryCode(ctx: AppContext, code: string): Promise<string> {
  return hmacSha256(await totpKey(ctx), normalizeRecoveryCode(code));
}

/**
 * Checks a 6-digit TOTP code (±1 step) and uses it up, or a recovery code (once each).
 * A TOTP step accepted once is never accepted again (no replay).
 */
export async function useCode(ctx: AppContext, user: UserRow, code: unknown, opts: { allowRecovery: boolean }): Promise<boolean> {
  const c = codeString(code);
  if (c === null) return false;
  if (/^\d{6}$/.test(c)) {
    if (!user.totp_secret) return false;
    const base32 = await decryptSecret(ctx, user.totp_secret);
    if (!base32) return false;
    const now = ctx.clock.now();
    const delta = (await totpFor(ctx, user, base32)).validate({ token: c, timestamp: now, window: 1 });
    if (delta === null) return false;
    const step = Math.floor(now / 1000 / PERIOD) + delta;
    // Each step's code is used once (a replay is refused), in any order within the window: the code of the step
    // before is still good after this step's was used. Kept until no code of the step is accepted any more.
    return await useTotpStep(ctx.db, user.id, step, (step + 2) * PERIOD * 1000, now);
  }
  if (!opts.allowRecovery || !/^[0-9a-z\s-]{8,32}$/i.test(c)) return false;
  return await useRecoveryCode(ctx.db, user.id, await hashRecoveryCode(ctx, c), ctx.clock.now());
}

async function currentUser(ctx: AppContext, p: Principal): Promise<UserRow> {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  const user = await findUserById(ctx, p.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  return user;
}

/** A code as sent: a string, or a number that a client's JSON encoder made of a 6-digit code (leading zeros restored). */
function codeString(code: unknown): string | null {
  if (typeof code === "number" && Number.isInteger(code) && code >= 0 && code < 1_000_000) return String(code).padStart(6, "0");
  if (typeof code !== "string" || code.length > 64) return null;
  return code.trim();
}

function codeFrom(input: Checked<{ code: unknown }>): unknown {
  const code = bodyOf(input).code;
  if (!codeString(code)) throw badRequest("code is required (the 6-digit code from the authenticator app)");
  return code;
}

/** `GET /auth/2fa/status`. */
export async function totpStatus(ctx: AppContext, p: Principal): Promise<{ enabled: boolean }> {
  return { enabled: !!(await currentUser(ctx, p)).totp_enabled };
}

/** `POST /auth/2fa/setup`: a fresh secret (pending until enable), returned only inside the otpauth URL. 409 when enabled. */
export async function setupTotp(ctx: AppContext, p: Principal): Promise<{ otpauth_url: string }> {
  const user = await currentUser(ctx, p);
  if (!await getSetting(ctx, "auth_totp_enabled")) throw methodDisabled("two-factor authentication");
  if (user.totp_enabled) throw conflict("two-factor authentication is already enabled");
  const secret = new (otpauth().Secret)({ size: 20 });
  const encrypted = await encryptSecret(ctx, secret.base32);
  // SECURITY: checked again where the secret is stored: an enable that committed meanwhile keeps its secret, and a
  // revoked session stores nothing.
  await ctx.db.transaction(async () => {
    await requireLiveCredential(ctx, p);
    if ((await currentUser(ctx, p)).totp_enabled) throw conflict("two-factor authentication is already enabled");
    await setTotpSecret(ctx.db, user.id, encrypted, ctx.clock.now());
    await forgetTotpSteps(ctx.db, user.id);
  });
  return { otpauth_url: (await totpFor(ctx, user, secret.base32)).toString() };
}

/** `POST /auth/2fa/enable {code}`: turns 2FA on and returns 10 recovery codes (stored hashed, shown once). */
export async function enableTotp(ctx: AppContext, p: Principal, input: Checked<{ code: unknown }>): Promise<{ enabled: true; recovery_codes: string[] }> {
  const user = await currentUser(ctx, p);
  if (!await getSetting(ctx, "auth_totp_enabled")) throw methodDisabled("two-factor authentication");
  const code = codeFrom(input);
  if (user.totp_enabled) throw conflict("two-factor authentication is already enabled");
  if (!user.totp_secret) throw badRequest("call POST /auth/2fa/setup first");
  if (!await useCode(ctx, user, code, { allowRecovery: false })) throw invalidCode();
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const hex = Buffer.from(crypto.getRandomValues(new Uint8Array(5))).toString("hex");
    return `${hex.slice(0, 5)}-${hex.slice(5)}`;
  });
  const hashed = await Promise.all(codes.map((c) => hashRecoveryCode(ctx, c)));
  await ctx.db.transaction(async () => {
    // SECURITY: on the user as stored now, not as read before the code was checked: a claim of the address, a
    // disable or a new setup that committed meanwhile (another secret, or none) leaves 2FA as it is (409), and
    // a revoked session turns nothing on.
    await requireLiveCredential(ctx, p);
    const now = await currentUser(ctx, p);
    if (now.totp_enabled) throw conflict("two-factor authentication is already enabled");
    if (now.totp_secret !== user.totp_secret) throw conflict("the two-factor secret changed meanwhile: call POST /auth/2fa/setup again");
    await deleteRecoveryCodes(ctx.db, user.id);
    for (const h of hashed) await insertRecoveryCode(ctx.db, user.id, h);
    await turnTotpOn(ctx.db, user.id, ctx.clock.now());
  });
  return { enabled: true, recovery_codes: codes };
}

/** `DELETE /auth/2fa/disable {code}`: a TOTP or recovery code turns 2FA off. Allowed while the method is disabled. */
export async function disableTotp(ctx: AppContext, p: Principal, input: Checked<{ code: unknown }>): Promise<{ enabled: false }> {
  const user = await currentUser(ctx, p);
  const code = codeFrom(input);
  if (!user.totp_enabled) throw conflict("two-factor authentication is not enabled");
  // Codes count as login attempts, so a stolen access token cannot be used to guess codes without limit.
  await takeLoginAttempt(ctx, user.email);
  if (!await useCode(ctx, user, code, { allowRecovery: true })) throw invalidCode();
  await ctx.db.transaction(async () => {
    await clearLoginAttempts(ctx, user.email);
    await removeTotp(ctx, user.id);
  });
  return { enabled: false };
}

/** Turns 2FA off for a user: drops the TOTP secret, the recovery codes and every pending 2FA login step. */
export async function removeTotp(ctx: AppContext, userId: string): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db.transaction(async () => {
    await turnTotpOff(ctx.db, userId, now);
    await forgetTotpSteps(ctx.db, userId);
    await deleteRecoveryCodes(ctx.db, userId);
    await useUserTokens(ctx.db, userId, ["totp_login"], now);
  });
}

/** What a login answers: a session, or the second step when 2FA is on. */
export type LoginResult = SessionResponse | { totp_required: true; totp_token: string };

/**
 * The end of every first-factor login (password, magic link, OAuth). A user with 2FA on gets
 * the second step: a `totp_token` (single use, 5 minutes, dead after 5 wrong codes), which
 * applies even while the TOTP method is disabled, since a user who has 2FA keeps needing it.
 * Anyone else gets a session, and their count of failed logins is cleared.
 */
export async function finishLogin(ctx: AppContext, user: UserRow, client: ClientInfo, stillValid?: () => Promise<void>): Promise<LoginResult> {
  // With 2FA the count is cleared only when the second step succeeds: else a caller who knows the
  // password could try codes forever by logging in again after every few wrong ones.
  if (user.totp_enabled) {
    const issue = () => issueMailToken(ctx, user.id, "totp_login", TOTP_TOKEN_TTL_MS);
    // `stillValid` in the token's transaction, as createSession runs it in the session's.
    const totpToken = stillValid ? await ctx.db.transaction(async () => (await stillValid(), await issue())) : await issue();
    return { totp_required: true, totp_token: totpToken };
  }
  await clearLoginAttempts(ctx, user.email);
  return await createSession(ctx, user, client, stillValid);
}

/** `POST /auth/2fa/verify {totp_token, code}`: the session for a valid token and code; 401 otherwise. */
export async function verifyTotpLogin(ctx: AppContext, input: Record<string, unknown>, client: ClientInfo): Promise<SessionResponse> {
  const { totp_token, code } = input;
  if (typeof totp_token !== "string" || !totp_token || totp_token.length > 256) throw badTotpToken();
  const hash = sha256(totp_token);
  const now = ctx.clock.now();
  const outcome = await ctx.db.transaction(async (): Promise<SessionResponse | "token" | "code"> => {
      const row = await liveTotpToken(ctx.db, hash, now);
      if (!row || row.attempts >= TOTP_MAX_ATTEMPTS) return "token";
      const user = await findUserById(ctx, row.user_id);
      if (!user || !user.totp_enabled) return "token";
      // A step opened by a password before require_verified_email was turned on: no session while unverified.
      await requireVerifiedEmail(ctx, user);
      // The same counter as passwords, taken before the code is checked: 429 while the account is locked.
      await takeLoginAttempt(ctx, user.email);
      if (!await useCode(ctx, user, code, { allowRecovery: true })) {
        const attempts = row.attempts + 1;
        await countTokenAttempt(ctx.db, hash, attempts, TOTP_MAX_ATTEMPTS, now);
        return "code";
      }
      await useToken(ctx.db, hash, now);
      await clearLoginAttempts(ctx, user.email);
      // SECURITY: the session in the same transaction as the checks: a claim of the address or a password
      // reset (which turn 2FA off or revoke sessions) either committed before, and this is refused, or commits
      // after, and revokes this session too.
      return await createSession(ctx, user, client);
    });
  if (outcome === "token") throw badTotpToken();
  if (outcome === "code") throw new AppError(401, "invalid_code", "invalid authentication code");
  return outcome;
}
