/** Random bytes as base64url. */
export function randomToken(bytes = 32): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
}

/** SHA-256 hex digest; used to store high-entropy secrets (tokens, keys) so a database leak does not leak them. */
export function sha256(input: string): string {
  return new Bun.CryptoHasher("sha256").update(input).digest("hex");
}

/** HMAC-SHA256 as base64url. */
export function hmacSha256(key: string | Uint8Array, data: string): string {
  return new Bun.CryptoHasher("sha256", key).update(data).digest("base64url");
}

/** IMPORTANT: constant-time compare, else a secret leaks through response timing. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    // Compare against itself so the time spent does not depend on where the strings differ.
    crypto.timingSafeEqual(ab, ab);
    return false;
  }
  return crypto.timingSafeEqual(ab, bb);
}
