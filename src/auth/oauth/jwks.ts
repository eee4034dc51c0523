import type { errors as JoseErrors, JSONWebKeySet, JWTVerifyGetKey, JWTVerifyOptions } from "jose";

/** jose is loaded with the first ID token checked, not at start. */
const jose = () => require("jose") as typeof import("jose");
import type { AppContext } from "../../context.ts";

/** Why an ID token was refused; the callback turns it into `error=provider_error`. */
export class IdTokenError extends Error {
  override name = "IdTokenError";
}

/** What an ID token must match (OpenID Connect Core 3.1.3.7). */
export interface IdTokenExpectations {
  /** Accepted `iss` values (Google uses two spellings). */
  issuers: string[];
  clientId: string;
  nonce: string;
  jwksUri: string;
}

const JWKS_TTL_MS = 60 * 60 * 1000;
/** A key id the cached set does not know triggers a refetch, at most this often, so forged kids cannot flood the provider. */
const JWKS_REFETCH_MS = 30 * 1000;
const CLOCK_SKEW_S = 60;
const FETCH_TIMEOUT_MS = 10_000;
/** Only asymmetric algorithms, so `none` and HMAC-keyed-with-the-public-key tricks are refused. */
const ALGORITHMS = ["RS256", "ES256"];

/** GETs a JSON document from a provider with a timeout; throws on any non-200 answer. */
export async function fetchJson(url: string, init: RequestInit = {}): Promise<unknown> {
  const res = await fetch(url, { ...init, redirect: "error", signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`${url} answered ${res.status}`);
  }
  return res.json();
}

interface CachedJwks {
  keys: JWTVerifyGetKey;
  fetchedAt: number;
}

/**
 * The provider's key set as jose's local set, fetched on the context's clock: kept an hour, and fetched again
 * early (at most every 30 s) when a token names a key it lacks. jose's createRemoteJWKSet would do the same on
 * the wall clock, which tests cannot move, so the fetching stays here and jose selects keys and verifies.
 */
async function providerKeys(ctx: AppContext, uri: string, force: boolean): Promise<JWTVerifyGetKey> {
  const cacheKey = `oauth:jwks:${uri}`;
  const cached = ctx.cache.get(cacheKey) as CachedJwks | undefined;
  const now = ctx.clock.now();
  if (cached && now - cached.fetchedAt < (force ? JWKS_REFETCH_MS : JWKS_TTL_MS)) return cached.keys;
  const { createLocalJWKSet, errors } = jose();
  let keys: JWTVerifyGetKey;
  try {
    keys = createLocalJWKSet((await fetchJson(uri)) as JSONWebKeySet);
  } catch (err) {
    if (err instanceof errors.JOSEError) throw new IdTokenError("the JWKS document has no keys");
    throw err;
  }
  ctx.cache.set(cacheKey, { keys, fetchedAt: now } satisfies CachedJwks);
  return keys;
}

/** The reason logged for a token jose refused, in the words the callback's log has always used. */
function reasonFor(err: JoseErrors.JOSEError): string {
  const { errors } = jose();
  if (err instanceof errors.JWTExpired) return "expired ID token";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "iss") return "wrong ID token issuer";
    if (err.claim === "aud") return "wrong ID token audience";
    if (err.claim === "exp") return "expired ID token";
    if (err.claim === "nbf" || err.claim === "iat") return "ID token issued in the future";
    return `invalid ID token claim ${err.claim}`;
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return "bad ID token signature";
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return "no provider key matches the ID token";
  if (err instanceof errors.JOSENotSupported) return "the ID token signature could not be checked";
  return "malformed ID token";
}

/**
 * Verifies an ID token with jose: signature against the provider's JWKS (RS256 or ES256 only),
 * issuer, audience, expiry (60 s of clock skew), then nonce, authorized party and subject. Returns the claims.
 */
export async function verifyIdToken(ctx: AppContext, token: string, expect: IdTokenExpectations): Promise<Record<string, unknown>> {
  const { decodeProtectedHeader, errors, jwtVerify } = jose();
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token).alg;
  } catch {
    throw new IdTokenError("malformed ID token");
  }
  if (typeof alg !== "string" || !ALGORITHMS.includes(alg)) throw new IdTokenError(`unsupported ID token algorithm ${String(alg)}`);
  const options: JWTVerifyOptions = {
    algorithms: ALGORITHMS,
    issuer: expect.issuers,
    audience: expect.clientId,
    clockTolerance: CLOCK_SKEW_S,
    currentDate: new Date(ctx.clock.now()),
    requiredClaims: ["exp"],
  };
  let claims: Record<string, unknown>;
  try {
    try {
      ({ payload: claims } = await jwtVerify(token, await providerKeys(ctx, expect.jwksUri, false), options));
    } catch (err) {
      // A key the cached set lacks: the provider may have rotated its keys since.
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      ({ payload: claims } = await jwtVerify(token, await providerKeys(ctx, expect.jwksUri, true), options));
    }
  } catch (err) {
    // A failed fetch of the key set is the provider's failure, not the token's: it goes up as it is.
    if (!(err instanceof errors.JOSEError)) throw err;
    throw new IdTokenError(reasonFor(err));
  }
  const now = Math.floor(ctx.clock.now() / 1000);
  if (typeof claims.iat === "number" && claims.iat - CLOCK_SKEW_S > now) throw new IdTokenError("ID token issued in the future");
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (aud.length > 1 && claims.azp !== expect.clientId) throw new IdTokenError("wrong ID token authorized party");
  // IMPORTANT: the nonce ties the token to this browser's login; without it a token from another login could be replayed.
  if (typeof claims.nonce !== "string" || claims.nonce !== expect.nonce) throw new IdTokenError("wrong ID token nonce");
  if (typeof claims.sub !== "string" || !claims.sub) throw new IdTokenError("the ID token has no subject");
  return claims;
}
