import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { clientAddress, formatIp, inRanges, parseIp, parseIpRange, type IpRange } from "../../src/ip.ts";

const ranges = (...items: string[]): IpRange[] => items.map((s) => parseIpRange(s)!);

describe("addresses and ranges", () => {
  test("IPv4, IPv6 and mapped addresses parse to one form each", () => {
    const cases: [string, string | null][] = [
      ["127.0.0.1", "127.0.0.1"],
      ["::ffff:127.0.0.1", "127.0.0.1"],
      ["::FFFF:7f00:1", "127.0.0.1"],
      ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
      ["[2001:db8::1]", "2001:db8::1"],
      ["fe80::1%eth0", "fe80::1"],
      ["::", "::"],
      ["::1", "::1"],
      ["1:0:0:2:0:0:0:3", "1:0:0:2::3"],
      ["256.0.0.1", null],
      ["01.2.3.4", null],
      ["1.2.3", null],
      ["1::2::3", null],
      ["1:2:3:4:5:6:7:8:9", null],
      ["unknown", null],
      ["", null],
    ];
    for (const [raw, want] of cases) {
      const b = parseIp(raw);
      expect([raw, b && formatIp(b)]).toEqual([raw, want]);
    }
  });

  test("CIDR ranges match by prefix, IPv4 and IPv6 apart", () => {
    const r = ranges("10.0.0.0/8", "192.168.1.128/25", "fd00::/8", "203.0.113.9", "::ffff:172.16.0.0/108");
    const inside = ["10.255.0.1", "192.168.1.200", "fd12::1", "203.0.113.9", "::ffff:10.1.1.1", "172.16.5.5"];
    const outside = ["11.0.0.1", "192.168.1.127", "fe00::1", "203.0.113.10", "::a00:1", "172.32.0.1"];
    for (const a of inside) expect([a, inRanges(r, parseIp(a)!)]).toEqual([a, true]);
    for (const a of outside) expect([a, inRanges(r, parseIp(a)!)]).toEqual([a, false]);
    expect(inRanges(ranges("0.0.0.0/0"), parseIp("8.8.8.8")!)).toBe(true);
    expect(inRanges(ranges("::/0"), parseIp("8.8.8.8")!)).toBe(false);
    for (const bad of ["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/x", "nginx", "10.0.0.0/8/8"]) expect([bad, parseIpRange(bad)]).toEqual([bad, null]);
  });

  test("TRUST_PROXY and --trust-proxy are read into ranges; a bad entry stops the start", () => {
    expect(loadConfig({}, { TRUST_PROXY: "" }).trustProxy).toEqual([]);
    expect(loadConfig({}, { TRUST_PROXY: " 127.0.0.1 , ::1,10.0.0.0/8 " }).trustProxy.length).toBe(3);
    expect(loadConfig({ trustProxy: "fd00::/8" }, { TRUST_PROXY: "10.0.0.1,10.0.0.2" }).trustProxy.length).toBe(1);
    expect(() => loadConfig({}, { TRUST_PROXY: "127.0.0.1,proxy.local" })).toThrow(ConfigError);
    expect(() => loadConfig({}, { TRUST_PROXY: "127.0.0.1,proxy.local" })).toThrow('TRUST_PROXY: "proxy.local" is not an IP address or CIDR range');
  });
});

describe("the client address", () => {
  const proxies = ranges("10.0.0.0/8", "127.0.0.1", "::1");

  test("without trusted proxies, or from a peer not in the list, X-Forwarded-For is ignored", () => {
    expect(clientAddress([], "127.0.0.1", "1.2.3.4")).toBe("127.0.0.1");
    expect(clientAddress(proxies, "198.51.100.7", "1.2.3.4")).toBe("198.51.100.7");
    expect(clientAddress(proxies, "::ffff:198.51.100.7", "10.0.0.1")).toBe("198.51.100.7");
    expect(clientAddress(proxies, null, "1.2.3.4")).toBeNull();
  });

  test("from a trusted peer, the right-most entry that is not a trusted proxy is the client", () => {
    const cases: [string | null, string][] = [
      ["203.0.113.5", "203.0.113.5"],
      ["6.6.6.6, 203.0.113.5", "203.0.113.5"],
      ["6.6.6.6,203.0.113.5, 10.1.2.3", "203.0.113.5"],
      ["203.0.113.5, 10.1.2.3, 127.0.0.1", "203.0.113.5"],
      ["203.0.113.5:5151", "203.0.113.5"],
      ["[2001:db8::7]:443", "2001:db8::7"],
      ["2001:DB8::7", "2001:db8::7"],
      ["203.0.113.5, ", "203.0.113.5"],
      // Every entry a proxy: the left-most (the first proxy's client) counts.
      ["10.9.9.9, 10.1.1.1", "10.9.9.9"],
      // An entry that is no address ends the walk at the last trusted hop: a client cannot name itself.
      ["203.0.113.5, junk", "10.0.0.2"],
      ["203.0.113.5, junk, 10.1.1.1", "10.1.1.1"],
      ["", "10.0.0.2"],
      [null, "10.0.0.2"],
    ];
    for (const [xff, want] of cases) expect([xff, clientAddress(proxies, "10.0.0.2", xff)]).toEqual([xff, want]);
  });
});
