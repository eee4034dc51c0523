import { formatIp, inRanges, parseIp, parseIpRange, type IpBytes, type IpRange } from "../ip.ts";

/**
 * Which webhook addresses are private (see the setting `webhooks_allow_private_addresses`). IMPORTANT: a
 * webhook makes the server send requests from inside its own network, to whatever address an admin gives
 * (server-side request forgery). Admins choose the addresses, and a receiver on the same machine or network
 * is common, so private addresses are allowed by default; a deployment whose admins must not reach internal
 * services turns the setting off, and then neither the address as written nor any address its name
 * resolves to at delivery may be loopback, private, link-local, shared, multicast or reserved.
 */

const PRIVATE_RANGES: readonly IpRange[] = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/4",
  "240.0.0.0/4",
  // IPv4-compatible and unspecified (`::`, `::1`, `::a.b.c.d`), unique local, link-local, multicast, local NAT64.
  "::/96",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
  "64:ff9b:1::/48",
].map((r) => parseIpRange(r)!);

/** IPv6 prefixes that carry an IPv4 address (NAT64 in the last 32 bits, 6to4 in bits 16..47): judged by it. */
function embeddedIpv4(b: IpBytes): IpBytes | null {
  if (b.length !== 16) return null;
  const nat64 = [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];
  if (nat64.every((x, i) => b[i] === x)) return b.slice(12);
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6);
  return null;
}

/** True when the address is one a server should not reach on an outsider's behalf. */
export function isPrivateAddress(b: IpBytes): boolean {
  if (inRanges(PRIVATE_RANGES, b)) return true;
  const v4 = embeddedIpv4(b);
  return v4 !== null && inRanges(PRIVATE_RANGES, v4);
}

/** Why a URL's host is private as written (`localhost`, an address in a private range), or null. */
export function privateHostReason(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "a local host";
  const ip = parseIp(host);
  return ip && isPrivateAddress(ip) ? `a private address (${formatIp(ip)})` : null;
}

/**
 * Resolves a URL's host and returns the address to connect to, or throws when the host is private as written or
 * any address it resolves to is (a name may resolve to several; all must be public).
 */
export async function publicAddress(hostname: string): Promise<string> {
  const written = privateHostReason(hostname);
  if (written) throw new Error(`refused: the address is ${written} (webhooks_allow_private_addresses is false)`);
  const literal = parseIp(hostname);
  if (literal) return formatIp(literal);
  // Loaded at the first delivery that needs it, not at every start.
  const { lookup } = await import("node:dns/promises");
  const found = await lookup(hostname, { all: true });
  if (found.length === 0) throw new Error(`${hostname} does not resolve`);
  for (const { address } of found) {
    const ip = parseIp(address);
    if (!ip || isPrivateAddress(ip)) throw new Error(`refused: ${hostname} resolves to a private address (${address}) (webhooks_allow_private_addresses is false)`);
  }
  return found[0]!.address;
}
