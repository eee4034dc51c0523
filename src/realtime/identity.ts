import { isAdminCredential } from "../auth/admin.ts";
import { looksLikeJwt, verifyJwt } from "../auth/jwt.ts";
import { jwtKey } from "../auth/keys.ts";
import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { safeEqual, sha256 } from "../crypto.ts";
import { getMeta } from "../db/meta.ts";
import { liveApiKeyRows } from "../tables/api-keys.ts";
import { liveSessionRows } from "../tables/sessions.ts";
import { accessOf, credentialsVersion, existingUserIds, usersAccessRows, type UserAccess } from "../tables/users.ts";

/** Who a stream acts for, and what ends that. */
export interface Identity {
  principal: Principal;
  /** Equal for the same caller across credentials: "anonymous", "admin" or "user:<id>". */
  key: string;
  /** Unix ms at which the credential expires (an access or admin token's `exp`), else null. */
  expiresAt: number | null;
  /** The admin credential, re-checked while the stream lives (a rotated secret ends it). */
  adminCredential: string | null;
  /**
   * What is re-checked instead for an admin identity that another node resolved (the credential itself
   * never leaves the node it was presented to): the secret's hash, or the admin token's epoch.
   */
  adminProof?: AdminProof;
}

export type AdminProof = { secretHash: string } | { epoch: number };

/** An identity as sent to another node: what it needs to hold and re-check it, and no credential. */
export interface WireIdentity {
  principal: Principal;
  key: string;
  expiresAt: number | null;
  adminProof: AdminProof | null;
}

/** The identity of this node's request, to be held by another node. */
export async function identityForNode(ctx: AppContext, i: Identity): Promise<WireIdentity> {
  let adminProof: AdminProof | null = i.adminProof ?? null;
  if (i.adminCredential) {
    const claims = looksLikeJwt(i.adminCredential) ? verifyJwt(await jwtKey(ctx), i.adminCredential, ctx.clock.now()) : null;
    adminProof = claims?.typ === "admin" && typeof claims.epoch === "number" ? { epoch: claims.epoch } : { secretHash: sha256(i.adminCredential) };
  }
  // A user's metadata stays behind (a notice holds 8000 bytes; metadata may take 64 KB): the node that
  // holds the stream reads the user's row itself (identityFromNode).
  const p = i.principal;
  const principal: Principal = p.kind === "user" ? { ...p, metadata: {} } : p;
  return { principal, key: i.key, expiresAt: i.expiresAt, adminProof };
}

/** The identity another node sent, a user's roles and metadata read from the user's row as stored now. */
export async function identityFromNode(ctx: AppContext, w: WireIdentity): Promise<Identity> {
  let principal = w.principal;
  if (principal.kind === "user") {
    const now = (await currentAccess(ctx, [principal.userId])).get(principal.userId);
    principal = { ...principal, ...(now ?? { roles: [], metadata: {} }) };
  }
  return { principal, key: w.key, expiresAt: w.expiresAt, adminCredential: null, ...(w.adminProof ? { adminProof: w.adminProof } : {}) };
}

async function adminProofHolds(ctx: AppContext, proof: AdminProof): Promise<boolean> {
  if ("epoch" in proof) return proof.epoch === Number(await getMeta(ctx.db, "admin_epoch") ?? "1");
  const stored = await getMeta(ctx.db, "admin_secret_hash");
  return stored !== null && safeEqual(proof.secretHash, stored);
}

export const ANONYMOUS_IDENTITY: Identity = { principal: { kind: "anonymous" }, key: "anonymous", expiresAt: null, adminCredential: null };

/** The identity of a request whose credentials resolved to `principal`. */
export async function identityOf(ctx: AppContext, principal: Principal, request: Request): Promise<Identity> {
  if (principal.kind === "anonymous") return ANONYMOUS_IDENTITY;
  const h = request.headers;
  const bearer = /^Bearer\s+(.+)$/i.exec(h.get("authorization")?.trim() ?? "")?.[1].trim() ?? null;
  const adminToken = h.get("x-admin-token")?.trim() || null;
  const token = adminToken ?? bearer;
  let expiresAt: number | null = null;
  if (token && looksLikeJwt(token)) {
    const exp = verifyJwt(await jwtKey(ctx), token, ctx.clock.now())?.exp;
    if (typeof exp === "number") expiresAt = exp * 1000;
  }
  if (principal.kind === "admin") return { principal, key: "admin", expiresAt, adminCredential: token };
  return { principal, key: `user:${principal.userId}`, expiresAt, adminCredential: null };
}

/**
 * What the last check of a user identity found it alive under: the credentials version read before its rows, and
 * until when (its session's expiry). While the version stands and that time has not come, nothing that could end it
 * has happened (triggers move the version with every revocation, deletion, expiry change and user deletion, by any
 * process: migrations 0012 and 0017), so it is not read again.
 */
const aliveUnder = new WeakMap<Identity, { version: string; until: number }>();

/**
 * The streams whose identity has ended, among `identities`: an expired credential, a revoked or
 * expired session, a revoked API key, a deleted user, a rotated admin secret. One query per kind
 * for the identities not known alive under the credentials version read now (first of all), so the
 * check stays cheap with many subscribers; it reads the database, so a revocation made by another
 * process (the CLI) is seen too.
 */
export async function endedIdentities(ctx: AppContext, identities: Identity[]): Promise<Set<Identity>> {
  const now = ctx.clock.now();
  const ended = new Set<Identity>();
  const sessions = new Map<string, Identity[]>();
  const keys = new Map<string, Identity[]>();
  const users = new Map<string, Identity[]>();
  const add = (m: Map<string, Identity[]>, k: string, i: Identity) => (m.get(k) ?? m.set(k, []).get(k)!).push(i);
  let version: string | null = null;
  for (const i of identities) {
    const p = i.principal;
    if (i.expiresAt !== null && i.expiresAt <= now) ended.add(i);
    else if (p.kind === "admin") {
      if (i.adminCredential && !await isAdminCredential(ctx, i.adminCredential)) ended.add(i);
      else if (i.adminProof && !await adminProofHolds(ctx, i.adminProof)) ended.add(i);
    } else if (p.kind === "user") {
      // IMPORTANT: the version before the rows it vouches for.
      version ??= await credentialsVersion(ctx.db);
      const known = aliveUnder.get(i);
      if (known && known.version === version && known.until > now) continue;
      if (p.sessionId) add(sessions, p.sessionId, i);
      else if (p.apiKeyId) add(keys, p.apiKeyId, i);
      else add(users, p.userId, i);
    }
  }
  const live = async (ids: Map<string, Identity[]>, rows: (ids: string[]) => Promise<{ id: string; user_id: string; expires_at?: number }[]>) => {
    if (!ids.size) return;
    const alive = new Map((await rows([...ids.keys()])).map((r) => [`${r.id}\u0000${r.user_id}`, r.expires_at === undefined ? Infinity : Number(r.expires_at)]));
    for (const [id, list] of ids)
      for (const i of list) {
        const until = alive.get(`${id}\u0000${(i.principal as { userId: string }).userId}`);
        if (until === undefined) ended.add(i);
        else aliveUnder.set(i, { version: version!, until });
      }
  };
  await live(sessions, (ids) => liveSessionRows(ctx.db, ids, now));
  await live(keys, (ids) => liveApiKeyRows(ctx.db, ids));
  await live(users, async (ids) => (await existingUserIds(ctx.db, ids)).map((id) => ({ id, user_id: id })));
  return ended;
}

/**
 * The roles, metadata and address of each user as stored now (a user who no longer exists is left out):
 * one query for all of them. A stream reads with what its user has at delivery, not what it had when it
 * was opened (CONTRACT §10 "at that moment"): a role removed holds at the next event.
 */
export async function currentAccess(ctx: AppContext, userIds: readonly string[]): Promise<Map<string, UserAccess>> {
  const access = new Map<string, UserAccess>();
  for (const r of await usersAccessRows(ctx.db, userIds)) access.set(r.id, accessOf(r));
  return access;
}
