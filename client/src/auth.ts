import { isBaasError } from "./errors.js";
import type { StoredSession, Transport } from "./transport.js";
import type { AccountDeleted, OwnData, Session, TotpRequired, User } from "./types.js";

/** The `auth` part of the client: sign-up, sign-in, tokens and the signed-in user. */
export interface AuthApi {
  /** Creates an account and signs in (201 session). */
  register(email: string, password: string): Promise<Session>;
  /** Signs in with a password; a 2FA user gets `{ totp_required, totp_token }` for `verifyTotp`. */
  login(email: string, password: string): Promise<Session | TotpRequired>;
  /** Second step of a 2FA login: a TOTP or recovery code. */
  verifyTotp(totpToken: string, code: string | number): Promise<Session>;
  /** Mails a sign-in link (always `{ ok: true }`, whether or not the address has an account). */
  requestMagicLink(email: string): Promise<{ ok: true }>;
  /** Signs in with the token of a magic link. */
  verifyMagicLink(token: string): Promise<Session | TotpRequired>;
  /** Trades the refresh token for a new pair now (calls also do this by themselves on a 401). */
  refresh(): Promise<Session>;
  /** Ends the session on the server and forgets it here. */
  logout(): Promise<{ ok: true }>;
  /** The signed-in user, from the server. */
  me(): Promise<User>;
  /** The user and every active record they own, by collection (`GET /auth/me/export`). */
  exportData(): Promise<OwnData>;
  /**
   * Deletes the account and every record it owns (`DELETE /auth/me`), proven by the password, or a fresh 2FA code
   * when 2FA is on (an account with neither: nothing, from a sign-in at most 5 minutes old). Forgets the session.
   */
  deleteAccount(proof?: { password?: string; code?: string | number }): Promise<AccountDeleted>;
  /** The stored session, or null when signed out. */
  session(): Promise<StoredSession | null>;
  /** Adopts tokens obtained elsewhere (an OAuth callback), or signs out locally with null. */
  setSession(session: StoredSession | null): Promise<void>;
}

function isSession(v: Session | TotpRequired): v is Session {
  return typeof (v as Session).access_token === "string";
}

export function createAuth(t: Transport): AuthApi {
  async function keep<R extends Session | TotpRequired>(res: R): Promise<R> {
    if (isSession(res)) await t.saveSession(res);
    return res;
  }
  return {
    register: async (email, password) => keep(await t.request<Session>("POST", "/auth/register", { body: { email, password }, auth: false })),
    login: async (email, password) =>
      keep(await t.request<Session | TotpRequired>("POST", "/auth/login", { body: { email, password }, auth: false })),
    verifyTotp: async (totp_token, code) =>
      keep(await t.request<Session>("POST", "/auth/2fa/verify", { body: { totp_token, code: String(code) }, auth: false })),
    requestMagicLink: (email) => t.request("POST", "/auth/magic-link", { body: { email }, auth: false }),
    verifyMagicLink: async (token) =>
      keep(await t.request<Session | TotpRequired>("POST", "/auth/magic-link/verify", { body: { token }, auth: false })),
    refresh: () => t.refresh(),
    async logout() {
      if (!(await t.session())) return { ok: true };
      try {
        await t.request("POST", "/auth/logout");
      } catch (err) {
        // A session the server no longer knows is as good as logged out.
        if (!isBaasError(err) || err.status !== 401) throw err;
      } finally {
        await t.saveSession(null);
      }
      return { ok: true };
    },
    me: () => t.request<User>("GET", "/auth/me"),
    exportData: () => t.request<OwnData>("GET", "/auth/me/export"),
    async deleteAccount(proof = {}) {
      const body: Record<string, string> = {};
      if (proof.password !== undefined) body.password = proof.password;
      if (proof.code !== undefined) body.code = String(proof.code);
      const res = await t.request<AccountDeleted>("DELETE", "/auth/me", { body });
      await t.saveSession(null);
      return res;
    },
    session: () => t.session(),
    setSession: (s) => t.saveSession(s),
  };
}
