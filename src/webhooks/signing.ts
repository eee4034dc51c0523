/**
 * Webhook signatures (CONTRACT §15): `X-Baas-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact body
 * bytes sent, keyed with the webhook's secret. A receiver recomputes it over the raw body it got and
 * compares in constant time (docs/API.md shows how).
 */

/** The `X-Baas-Signature` value of `body` under `secret`. */
export function signBody(body: string, secret: string): string {
  return `sha256=${new Bun.CryptoHasher("sha256", secret).update(body).digest("hex")}`;
}

/** A new webhook secret: `whsec_` and 32 random bytes, base64url. */
export function newWebhookSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
}
