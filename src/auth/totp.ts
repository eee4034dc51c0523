import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import type { AppContext } from "../context.ts";
import { hmacSha256, randomToken, sha256 } from "../crypto.ts";
import { getMeta } from "../db/meta.ts";
import { AppError, asObject, badRequest, conflict, methodDisabled } from "../errors.ts";
import { getSetting } from "../settings/settings.ts";
import { findUserById, type UserRow } from "../users/users.ts";
import { clearLoginAttempts, takeLoginAttempt } from "./lockout.ts";
import { issueMailToken } from "./mail-tokens.ts";
import type { Principal } from "./principal.ts";
import { createSession, type ClientInfo, type SessionResponse } from "./sessions.ts";

export const TOTP_TOKEN_TTL_MS = 5 * 60 * 1000;
export const TOTP_MAX_ATTEMPTS = 5;
export const RECOVERY_CODE_COUNT = 10;
const PERIOD = 30;

const invalidCode = () => new AppError(400, "invalid_code", "invalid authentication code");
const badTotpToken = () => new AppError(401, "invalid_token", "invalid or expired totp_token");

/** The key that encrypts TOTP secrets and keys recovery-code hashes: generated once, kept in `_meta`. */
function totpKey(ctx: AppContext): Buffer {
  let key = ctx.cache.get("totp_key") as string | undefined;
  if (!key) {
    ctx.sqlite.query("INSERT OR IGNORE INTO _meta (key, value) VALUES ('totp_key', ?)").run(randomToken(32));
    key = getMeta(ctx.sqlite, "totp_key")!;
    ctx.cache.set("totp_key", key);
  }
  return Buffer.from(key, "base64url");
}

// The TOTP secret is stored encrypted (AES-256-GCM), so a copy of the users table alone does not yield codes.
function encryptSecret(ctx: AppContext, base32: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", totpKey(ctx), iv);
  const ct = Buffer.concat([c.update(base32, "utf8"), c.final()]);
  return `v1:${Buffer.concat([iv, c.getAuthTag(), ct]).toString("base64url")}`;
}

function decryptSecret(ctx: AppContext, stored: string): string | null {
  try {
    const raw = Buffer.from(stored.slice(3), "base64url");
    const d = createDecipheriv("aes-256-gcm", totpKey(ctx), raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
  } catch {
    return null;
  }
}

function totpFor(ctx: AppContext, user: UserRow, base32: string): TOTP {
  return new TOTP({
    issuer: getSetting(ctx, "app_name"),
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
function hashRecoveryCode(ctx: AppContext, code: string): string {
  return hmacSha256(totpKey(ctx), normalizeRecoveryCode(code));
}

/**
 * Checks a 6-digit TOTP code (±1 step) and uses it up, or a recovery code (once each).
 * A TOTP step accepted once is never accepted again (no replay).
 */
function useCode(ctx: AppContext, user: UserRow, code: unknown, opts: { allowRecovery: boolean }): boolean {
  const c = codeString(code);
  if (c === null) return false;
  if (/^\d{6}$/.test(c)) {
    if (!user.totp_secret) return false;
    const base32 = decryptSecret(ctx, user.totp_secret);
    if (!base32) return false;
    const now = ctx.clock.now();
    const delta = totpFor(ctx, user, base32).validate({ token: c, timestamp: now, window: 1 });
    if (delta === null) return false;
    const step = Math.floor(now / 1000 / PERIOD) + delta;
    // The conditional update makes "check and use" atomic: two requests with the same code cannot both pass.
    const r = ctx.sqlite
      .query("UPDATE _users SET totp_last_step = ? WHERE id = ? AND (totp_last_step IS NULL OR totp_last_step < ?)")
      .run(step, user.id, step);
    return r.changes > 0;
  }
  if (!opts.allowRecovery || !/^[0-9a-z\s-]{8,32}$/i.test(c)) return false;
  const r = ctx.sqlite
    .query("UPDATE _recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL")
    .run(ctx.clock.now(), user.id, hashRecoveryCode(ctx, c));
  return r.changes > 0;
}

function currentUser(ctx: AppContext, p: Principal): UserRow {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  const user = findUserById(ctx, p.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  return user;
}

/** A code as sent: a string, or a number that a client's JSON encoder made of a 6-digit code (leading zeros restored). */
function codeString(code: unknown): string | null {
  if (typeof code === "number" && Number.isInteger(code) && code >= 0 && code < 1_000_000) return String(code).padStart(6, "0");
  if (typeof code !== "string" || code.length > 64) return null;
  return code.trim();
}

function codeFrom(input: unknown): unknown {
  const code = asObject(input).code;
  if (!codeString(code)) throw badRequest("code is required (the 6-digit code from the authenticator app)");
  return code;
}

/** `GET /auth/2fa/status`. */
export function totpStatus(ctx: AppContext, p: Principal): { enabled: boolean } {
  return { enabled: !!currentUser(ctx, p).totp_enabled };
}

/** `POST /auth/2fa/setup`: a fresh secret (pending until enable), returned only inside the otpauth URL. 409 when enabled. */
export function setupTotp(ctx: AppContext, p: Principal): { otpauth_url: string } {
  const user = currentUser(ctx, p);
  if (!getSetting(ctx, "auth_totp_enabled")) throw methodDisabled("two-factor authentication");
  if (user.totp_enabled) throw conflict("two-factor authentication is already enabled");
  const secret = new Secret({ size: 20 });
  ctx.sqlite
    .query("UPDATE _users SET totp_secret = ?, totp_last_step = NULL, updated_at = ? WHERE id = ?")
    .run(encryptSecret(ctx, secret.base32), ctx.clock.now(), user.id);
  return { otpauth_url: totpFor(ctx, user, secret.base32).toString() };
}

/** `POST /auth/2fa/enable {code}`: turns 2FA on and returns 10 recovery codes (stored hashed, shown once). */
export function enableTotp(ctx: AppContext, p: Principal, input: unknown): { enabled: true; recovery_codes: string[] } {
  const user = currentUser(ctx, p);
  if (!getSetting(ctx, "auth_totp_enabled")) throw methodDisabled("two-factor authentication");
  const code = codeFrom(input);
  if (user.totp_enabled) throw conflict("two-factor authentication is already enabled");
  if (!user.totp_secret) throw badRequest("call POST /auth/2fa/setup first");
  if (!useCode(ctx, user, code, { allowRecovery: false })) throw invalidCode();
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const hex = randomBytes(5).toString("hex");
    return `${hex.slice(0, 5)}-${hex.slice(5)}`;
  });
  ctx.sqlite.transaction(() => {
    ctx.sqlite.query("DELETE FROM _recovery_codes WHERE user_id = ?").run(user.id);
    const ins = ctx.sqlite.query("INSERT OR IGNORE INTO _recovery_codes (user_id, code_hash) VALUES (?, ?)");
    for (const c of codes) ins.run(user.id, hashRecoveryCode(ctx, c));
    ctx.sqlite.query("UPDATE _users SET totp_enabled = 1, updated_at = ? WHERE id = ?").run(ctx.clock.now(), user.id);
  })();
  return { enabled: true, recovery_codes: codes };
}

/** `DELETE /auth/2fa/disable {code}`: a TOTP or recovery code turns 2FA off. Allowed while the method is disabled. */
export function disableTotp(ctx: AppContext, p: Principal, input: unknown): { enabled: false } {
  const user = currentUser(ctx, p);
  const code = codeFrom(input);
  if (!user.totp_enabled) throw conflict("two-factor authentication is not enabled");
  // Codes count as login attempts, so a stolen access token cannot be used to guess codes without limit.
  takeLoginAttempt(ctx, user.email);
  if (!useCode(ctx, user, code, { allowRecovery: true })) throw invalidCode();
  ctx.sqlite.transaction(() => {
    clearLoginAttempts(ctx, user.email);
    removeTotp(ctx, user.id);
  })();
  return { enabled: false };
}

/** Turns 2FA off for a user: drops the TOTP secret, the recovery codes and every pending 2FA login step. */
export function removeTotp(ctx: AppContext, userId: string): void {
  const now = ctx.clock.now();
  ctx.sqlite.transaction(() => {
    ctx.sqlite
      .query("UPDATE _users SET totp_enabled = 0, totp_secret = NULL, totp_last_step = NULL, updated_at = ? WHERE id = ?")
      .run(now, userId);
    ctx.sqlite.query("DELETE FROM _recovery_codes WHERE user_id = ?").run(userId);
    ctx.sqlite.query("UPDATE _tokens SET used_at = ? WHERE user_id = ? AND kind = 'totp_login' AND used_at IS NULL").run(now, userId);
  })();
}

/** What a login answers: a session, or the second step when 2FA is on. */
export type LoginResult = SessionResponse | { totp_required: true; totp_token: string };

/**
 * The end of every first-factor login (password, magic link, OAuth). A user with 2FA on gets
 * the second step: a `totp_token` (single use, 5 minutes, dead after 5 wrong codes), which
 * applies even while the TOTP method is disabled, since a user who has 2FA keeps needing it.
 * Anyone else gets a session, and their count of failed logins is cleared.
 */
export function finishLogin(ctx: AppContext, user: UserRow, client: ClientInfo): LoginResult {
  // With 2FA the count is cleared only when the second step succeeds: else a caller who knows the
  // password could try codes forever by logging in again after every few wrong ones.
  if (user.totp_enabled) return { totp_required: true, totp_token: issueMailToken(ctx, user.id, "totp_login", TOTP_TOKEN_TTL_MS) };
  clearLoginAttempts(ctx, user.email);
  return createSession(ctx, user, client);
}

/** `POST /auth/2fa/verify {totp_token, code}`: the session for a valid token and code; 401 otherwise. */
export function verifyTotpLogin(ctx: AppContext, input: unknown, client: ClientInfo): SessionResponse {
  const { totp_token, code } = asObject(input);
  if (typeof totp_token !== "string" || !totp_token || totp_token.length > 256) throw badTotpToken();
  const hash = sha256(totp_token);
  const now = ctx.clock.now();
  const outcome = ctx.sqlite
    .transaction((): UserRow | "token" | "code" => {
      const row = ctx.sqlite
        .query<{ user_id: string; attempts: number }, [string, number]>(
          "SELECT user_id, attempts FROM _tokens WHERE hash = ? AND kind = 'totp_login' AND used_at IS NULL AND expires_at > ?",
        )
        .get(hash, now);
      if (!row || row.attempts >= TOTP_MAX_ATTEMPTS) return "token";
      const user = findUserById(ctx, row.user_id);
      if (!user || !user.totp_enabled) return "token";
      // The same counter as passwords, taken before the code is checked: 429 while the account is locked.
      takeLoginAttempt(ctx, user.email);
      if (!useCode(ctx, user, code, { allowRecovery: true })) {
        const attempts = row.attempts + 1;
        ctx.sqlite
          .query("UPDATE _tokens SET attempts = ?, used_at = CASE WHEN ? >= ? THEN ? ELSE used_at END WHERE hash = ?")
          .run(attempts, attempts, TOTP_MAX_ATTEMPTS, now, hash);
        return "code";
      }
      ctx.sqlite.query("UPDATE _tokens SET used_at = ? WHERE hash = ?").run(now, hash);
      clearLoginAttempts(ctx, user.email);
      return user;
    })
    .immediate();
  if (outcome === "token") throw badTotpToken();
  if (outcome === "code") throw new AppError(401, "invalid_code", "invalid authentication code");
  return createSession(ctx, outcome, client);
}
