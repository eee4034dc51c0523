/**
 * IP addresses and CIDR ranges, for TRUST_PROXY: which peers are the operator's proxies, and so which
 * address a request comes from. Addresses are compared as bytes; an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`, what a dual-stack socket reports) is its IPv4 address.
 */

/** A parsed address: 4 or 16 bytes. */
export type IpBytes = Uint8Array;

/** A range of addresses: the first `bits` bits of `net`. */
export interface IpRange {
  net: IpBytes;
  bits: number;
}

function parseIPv4(s: string): IpBytes | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === "0")) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

function parseIPv6(s: string): IpBytes | null {
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  let tail: IpBytes | null = null;
  // A trailing dotted IPv4 part (`::ffff:1.2.3.4`) stands for the last two groups.
  const lastColon = s.lastIndexOf(":");
  if (s.includes(".", lastColon)) {
    tail = parseIPv4(s.slice(lastColon + 1));
    if (!tail) return null;
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const g = all[i]!;
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  }
  if (tail) out.set(tail, 12);
  return out;
}

/** `::ffff:a.b.c.d` as a.b.c.d; any other address as it is. */
function unmapped(b: IpBytes): IpBytes {
  if (b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  return b;
}

/** Parses an IPv4 or IPv6 address (brackets and a zone allowed for IPv6); null when it is none. */
export function parseIp(raw: string): IpBytes | null {
  let s = raw.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const b = s.includes(":") ? parseIPv6(s) : parseIPv4(s);
  return b && unmapped(b);
}

/** An address in its usual text form (IPv6 compressed, lower case), so one client has one key. */
export function formatIp(b: IpBytes): string {
  if (b.length === 4) return b.join(".");
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i]! << 8) | b[i + 1]!);
  // The longest run of two or more zero groups becomes "::" (the first such run on a tie).
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) (best = i), (bestLen = j - i);
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** Parses `10.0.0.0/8`, `fd00::/8` or a single address (the whole address is the range). */
export function parseIpRange(raw: string): IpRange | null {
  const slash = raw.indexOf("/");
  const addr = parseIp(slash < 0 ? raw : raw.slice(0, slash));
  if (!addr) return null;
  const max = addr.length * 8;
  if (slash < 0) return { net: addr, bits: max };
  const bitsText = raw.slice(slash + 1).trim();
  if (!/^\d{1,3}$/.test(bitsText)) return null;
  let bits = Number(bitsText);
  // A prefix written for the mapped IPv6 form (`::ffff:10.0.0.0/104`) counts the 96 bits before the IPv4 part.
  if (addr.length === 4 && raw.slice(0, slash).includes(":")) bits -= 96;
  if (bits < 0 || bits > max) return null;
  return { net: addr, bits };
}

/** True when `addr` lies in one of the ranges. */
export function inRanges(ranges: readonly IpRange[], addr: IpBytes): boolean {
  for (const r of ranges) {
    if (r.net.length !== addr.length) continue;
    let bits = r.bits;
    let i = 0;
    for (; bits >= 8; i++, bits -= 8) if (r.net[i] !== addr[i]) break;
    if (bits >= 8) continue;
    if (bits === 0 || ((r.net[i]! ^ addr[i]!) & (0xff << (8 - bits)) & 0xff) === 0) return true;
  }
  return false;
}

/**
 * One `X-Forwarded-For` entry as an address: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]:443`.
 * null when it is not one.
 */
function forwardedEntry(entry: string): IpBytes | null {
  const s = entry.trim();
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(s);
  if (v4port) return parseIp(v4port[1]!);
  const v6port = /^\[([^\]]+)\]:\d{1,5}$/.exec(s);
  if (v6port) return parseIp(v6port[1]!);
  return parseIp(s);
}

/**
 * The address a request comes from. Without trusted proxies it is the socket's peer. When the peer is
 * one of `trusted`, `X-Forwarded-For` is read from the right: each proxy appends the address it got the
 * request from, so the right-most entry that is not itself a trusted proxy is the client. IMPORTANT:
 * entries further left were written by the client and prove nothing; they are never read past that one.
 * If every entry is a trusted proxy the left-most counts; an entry that is no address ends the walk at
 * the last trusted hop (a misconfigured proxy must not let clients name themselves).
 */
export function clientAddress(trusted: readonly IpRange[], peer: string | null, forwardedFor: string | null): string | null {
  if (peer === null) return null;
  const peerBytes = parseIp(peer);
  if (!peerBytes) return peer;
  if (trusted.length === 0 || !forwardedFor || !inRanges(trusted, peerBytes)) return formatIp(peerBytes);
  const entries = forwardedFor.split(",");
  let hop = peerBytes;
  for (let i = entries.length - 1; i >= 0; i--) {
    if (!entries[i]!.trim()) continue;
    const addr = forwardedEntry(entries[i]!);
    if (!addr) break;
    hop = addr;
    if (!inRanges(trusted, addr)) break;
  }
  return formatIp(hop);
}
