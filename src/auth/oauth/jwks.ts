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

interface Jwk extends JsonWebKey {
  kid?: string;
  alg?: string;
  use?: string;
}

const JWKS_TTL_MS = 60 * 60 * 1000;
/** A key id the cached set does not know triggers a refetch, at most this often, so forged kids cannot flood the provider. */
const JWKS_REFETCH_MS = 30 * 1000;
const CLOCK_SKEW_S = 60;
const FETCH_TIMEOUT_MS = 10_000;

const ALGS: Record<string, { import: RsaHashedImportParams | EcKeyImportParams; verify: AlgorithmIdentifier | EcdsaParams; kty: string }> = {
  RS256: { import: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, verify: { name: "RSASSA-PKCS1-v1_5" }, kty: "RSA" },
  ES256: { import: { name: "ECDSA", namedCurve: "P-256" }, verify: { name: "ECDSA", hash: "SHA-256" }, kty: "EC" },
};

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
  keys: Jwk[];
  fetchedAt: number;
}

async function loadJwks(ctx: AppContext, uri: string, force: boolean): Promise<Jwk[]> {
  const cacheKey = `oauth:jwks:${uri}`;
  const cached = ctx.cache.get(cacheKey) as CachedJwks | undefined;
  const now = ctx.clock.now();
  if (cached && (force ? now - cached.fetchedAt < JWKS_REFETCH_MS : now - cached.fetchedAt < JWKS_TTL_MS)) return cached.keys;
  const doc = (await fetchJson(uri)) as { keys?: unknown };
  if (!doc || !Array.isArray(doc.keys)) throw new IdTokenError("the JWKS document has no keys");
  const keys = doc.keys.filter((k): k is Jwk => !!k && typeof k === "object");
  ctx.cache.set(cacheKey, { keys, fetchedAt: now } satisfies CachedJwks);
  return keys;
}

function decodePart(part: string): Record<string, unknown> {
  const value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new IdTokenError("malformed JWT");
  return value as Record<string, unknown>;
}

function pickKey(keys: Jwk[], kid: string | undefined, alg: string): Jwk | undefined {
  const spec = ALGS[alg]!;
  return keys.find(
    (k) => k.kty === spec.kty && (k.use === undefined || k.use === "sig") && (k.alg === undefined || k.alg === alg) && (kid === undefined || k.kid === kid),
  );
}

/**
 * Verifies an ID token: signature against the provider's JWKS (RS256 or ES256 only, so
 * `none` and HMAC-with-public-key tricks are refused), then issuer, audience, expiry and
 * nonce. Returns the claims.
 */
export async function verifyIdToken(ctx: AppContext, token: string, expect: IdTokenExpectations): Promise<Record<string, unknown>> {
  const parts = token.split(".");
  if (parts.length !== 3) throw new IdTokenError("malformed ID token");
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = decodePart(parts[0]!);
    claims = decodePart(parts[1]!);
  } catch {
    throw new IdTokenError("malformed ID token");
  }
  const alg = header.alg;
  if (typeof alg !== "string" || !(alg in ALGS)) throw new IdTokenError(`unsupported ID token algorithm ${String(alg)}`);
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  let jwk = pickKey(await loadJwks(ctx, expect.jwksUri, false), kid, alg);
  if (!jwk) jwk = pickKey(await loadJwks(ctx, expect.jwksUri, true), kid, alg);
  if (!jwk) throw new IdTokenError("no provider key matches the ID token");
  const spec = ALGS[alg]!;
  let ok: boolean;
  try {
    const { kid: _k, alg: _a, use: _u, key_ops: _o, ...material } = jwk;
    const key = await crypto.subtle.importKey("jwk", material, spec.import, false, ["verify"]);
    const signature = Buffer.from(parts[2]!, "base64url");
    ok = await crypto.subtle.verify(spec.verify, key, signature, new TextEncoder().encode(`${parts[0]}.${parts[1]}`));
  } catch {
    throw new IdTokenError("the ID token signature could not be checked");
  }
  if (!ok) throw new IdTokenError("bad ID token signature");

  if (typeof claims.iss !== "string" || !expect.issuers.includes(claims.iss)) throw new IdTokenError("wrong ID token issuer");
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(expect.clientId)) throw new IdTokenError("wrong ID token audience");
  if (aud.length > 1 && claims.azp !== expect.clientId) throw new IdTokenError("wrong ID token authorized party");
  const now = Math.floor(ctx.clock.now() / 1000);
  if (typeof claims.exp !== "number" || claims.exp + CLOCK_SKEW_S <= now) throw new IdTokenError("expired ID token");
  if (typeof claims.iat === "number" && claims.iat - CLOCK_SKEW_S > now) throw new IdTokenError("ID token issued in the future");
  // IMPORTANT: the nonce ties the token to this browser's login; without it a token from another login could be replayed.
  if (typeof claims.nonce !== "string" || claims.nonce !== expect.nonce) throw new IdTokenError("wrong ID token nonce");
  if (typeof claims.sub !== "string" || !claims.sub) throw new IdTokenError("the ID token has no subject");
  return claims;
}
