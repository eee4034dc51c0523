import { hmacSha256, safeEqual } from "../crypto.ts";

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/** Signs claims as an HS256 JWT. */
export function signJwt(key: string, claims: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
  const data = `${HEADER}.${body}`;
  return `${data}.${hmacSha256(key, data)}`;
}

/**
 * Tokens whose signature was found good, with their claims as parsed (null: not a JSON object), for the
 * key `signedWith`: a client sends the same access token with every request, and its HMAC and claims are
 * the same every time. Only a token that passed the check enters, so no guess is ever remembered; expiry
 * is still read from the claims on every use, and sessions are still checked by the caller. Emptied when
 * full or when the key changes.
 */
const verified = new Map<string, Readonly<Record<string, unknown>> | null>();
let signedWith = "";
const MAX_VERIFIED = 2048;

/** True when `token` is an HS256 JWT signed with `key`, expired or not. */
export function isSignedJwt(key: string, token: string): boolean {
  if (key === signedWith && verified.has(token)) return true;
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== HEADER) return false;
  // IMPORTANT: constant-time compare of the signature, else a valid MAC can be found byte by byte.
  if (!safeEqual(hmacSha256(key, `${parts[0]}.${parts[1]}`), parts[2])) return false;
  if (key !== signedWith || verified.size >= MAX_VERIFIED) {
    verified.clear();
    signedWith = key;
  }
  verified.set(token, parseClaims(parts[1]));
  return true;
}

/** The claims part of a token as an object (frozen, as it is shared), or null when it is not one. */
function parseClaims(part: string): Readonly<Record<string, unknown>> | null {
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!claims || typeof claims !== "object" || Array.isArray(claims)) return null;
  for (const v of Object.values(claims)) if (v && typeof v === "object") Object.freeze(v);
  return Object.freeze(claims as Record<string, unknown>);
}

/** Verifies an HS256 JWT's signature and `exp` (seconds); returns its claims or null. */
export function verifyJwt(key: string, token: string, nowMs: number): Record<string, unknown> | null {
  return isSignedJwt(key, token) ? unexpiredClaims(token, nowMs) : null;
}

/**
 * The claims of a token whose signature the caller has just checked with isSignedJwt (so a request
 * computes the HMAC once), or null when they are malformed or `exp` has passed. IMPORTANT: never call
 * it on a token that was not checked: it does not look at the signature.
 */
export function unexpiredClaims(token: string, nowMs: number): Readonly<Record<string, unknown>> | null {
  const claims = verified.has(token) ? verified.get(token)! : parseClaims(token.split(".")[1] ?? "");
  if (!claims) return null;
  const exp = claims.exp;
  if (typeof exp !== "number" || exp * 1000 <= nowMs) return null;
  return claims;
}

/** True when a string has the shape of a JWT (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
