import { hmacSha256, safeEqual } from "../crypto.ts";

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/** Signs claims as an HS256 JWT. */
export function signJwt(key: string, claims: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
  const data = `${HEADER}.${body}`;
  return `${data}.${hmacSha256(key, data)}`;
}

/** True when `token` is an HS256 JWT signed with `key`, expired or not. */
export function isSignedJwt(key: string, token: string): boolean {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== HEADER) return false;
  // IMPORTANT: constant-time compare of the signature, else a valid MAC can be found byte by byte.
  return safeEqual(hmacSha256(key, `${parts[0]}.${parts[1]}`), parts[2]);
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
export function unexpiredClaims(token: string, nowMs: number): Record<string, unknown> | null {
  const parts = token.split(".");
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!claims || typeof claims !== "object" || Array.isArray(claims)) return null;
  const exp = (claims as { exp?: unknown }).exp;
  if (typeof exp !== "number" || exp * 1000 <= nowMs) return null;
  return claims as Record<string, unknown>;
}

/** True when a string has the shape of a JWT (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
