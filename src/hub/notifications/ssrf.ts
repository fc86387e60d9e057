import { lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';

/**
 * The SSRF guard of notification delivery: a destination's host is resolved at send time, every
 * address it resolves to must be public (unless the deployment allows private destinations), and
 * the request then connects to the address that was checked (see `pinnedLookup`), so a second DNS
 * answer (rebinding) never reaches the socket.
 */

/** Why an address is not public, or null when it is. */
export function refusedAddressReason(address: string): string | null {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v = isIP(ip);
  if (v === 4) return v4Reason(v4Octets(ip)!);
  if (v === 6) {
    const h = v6Hextets(ip);
    if (!h) return 'not a valid address';
    return v6Reason(h);
  }
  return 'not an IP address';
}

function v4Octets(ip: string): number[] | null {
  const parts = ip.split('.').map(Number);
  return parts.length === 4 && parts.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? parts : null;
}

function v4Reason([a, b, c]: number[]): string | null {
  if (a === 0) return 'unspecified ("this network") address';
  if (a === 127) return 'loopback address';
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168)) return 'private address';
  if (a === 100 && b! >= 64 && b! <= 127) return 'carrier-grade NAT address';
  if (a === 169 && b === 254) return 'link-local address';
  if (a === 192 && b === 0 && c === 0) return 'IETF protocol assignment address';
  if (a === 198 && (b === 18 || b === 19)) return 'benchmarking address';
  if (a! >= 224) return a! < 240 ? 'multicast address' : 'reserved address';
  return null;
}

/** The 8 hextets of an IPv6 address (with an embedded dotted IPv4 tail), or null. */
function v6Hextets(ip: string): number[] | null {
  let s = ip.toLowerCase();
  const lastColon = s.lastIndexOf(':');
  const v4 = s.slice(lastColon + 1);
  if (v4.includes('.')) {
    // "::ffff:1.2.3.4" → "::ffff:102:304"
    const o = v4Octets(v4);
    if (!o) return null;
    s = `${s.slice(0, lastColon + 1)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((x) => Number.parseInt(x, 16)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  if (fill < 0) return null;
  const words = [...head, ...new Array<number>(fill).fill(0), ...rest];
  if (words.length !== 8 || words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffff)) return null;
  return words;
}

function v6Reason(h: number[]): string | null {
  const embeddedV4 = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  const zeros = (n: number) => h.slice(0, n).every((w) => w === 0);
  if (zeros(8)) return 'unspecified address';
  if (zeros(7) && h[7] === 1) return 'loopback address';
  // IPv4-mapped (::ffff:0:0/96, in any spelling: ::ffff:127.0.0.1 is ::ffff:7f00:1), IPv4-
  // translated (::ffff:0:0:0/96) and IPv4-compatible (::/96) addresses are refused whatever IPv4
  // address they carry: a public DNS answer has no reason to use them, and a dual-stack socket
  // would reach the IPv4 address behind them. The reason names a private IPv4 address when it is one.
  if (zeros(5) && h[5] === 0xffff) return v4Reason(embeddedV4(h[6]!, h[7]!)) ?? 'IPv4-mapped address';
  if (zeros(4) && h[4] === 0xffff && h[5] === 0)
    return v4Reason(embeddedV4(h[6]!, h[7]!)) ?? 'IPv4-translated address';
  if (zeros(6)) return v4Reason(embeddedV4(h[6]!, h[7]!)) ?? 'IPv4-compatible address';
  // NAT64: the local-use prefix 64:ff9b:1::/48 (RFC 8215) is refused; the well-known prefix
  // 64:ff9b::/96 and 6to4 (2002::/16) carry an IPv4 address that must be public.
  if (h[0] === 0x64 && h[1] === 0xff9b && h[2] === 1) return 'local-use NAT64 address';
  if (h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((w) => w === 0))
    return v4Reason(embeddedV4(h[6]!, h[7]!));
  if (h[0] === 0x2002) return v4Reason(embeddedV4(h[1]!, h[2]!));
  if ((h[0]! & 0xfe00) === 0xfc00) return 'unique-local address';
  if ((h[0]! & 0xffc0) === 0xfe80) return 'link-local address';
  if ((h[0]! & 0xffc0) === 0xfec0) return 'site-local address';
  if ((h[0]! & 0xff00) === 0xff00) return 'multicast address';
  if (h[0] === 0x2001 && h[1] === 0xdb8) return 'documentation address';
  return null;
}

/** "a loopback address", "an IPv4-mapped address", "an unspecified address". */
const article = (reason: string) => (/^(IPv4|IETF|unspecified)/.test(reason) ? 'an' : 'a');

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type LookupAll = (host: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo, so /etc/hosts and `localhost` count), every address. */
export const systemLookup: LookupAll = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => {
      if (err) reject(err);
      else resolve(addrs.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

/** A destination the guard refused; the delivery fails permanently with this message. */
export class RefusedDestination extends Error {}

/**
 * Resolves the URL's host and checks every address. Returns the address to connect to (the first
 * one). With `allowPrivate`, private addresses pass (a deployment whose receivers are internal).
 */
export async function checkDestination(
  url: URL,
  allowPrivate: boolean,
  lookup: LookupAll = systemLookup,
): Promise<ResolvedAddress> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  let addrs: ResolvedAddress[];
  if (literal) addrs = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addrs = await lookup(host);
    } catch (err) {
      throw new Error(
        `cannot resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    if (addrs.length === 0) throw new Error(`cannot resolve ${host}: no addresses`);
  }
  if (!allowPrivate) {
    for (const a of addrs) {
      const why = refusedAddressReason(a.address);
      if (why) {
        throw new RefusedDestination(
          `destination refused: ${host} ${literal ? 'is' : `resolves to ${a.address},`} ${article(why)} ${why}; ` +
            'set notifications.allow_private_destinations to true to allow private destinations',
        );
      }
    }
  }
  return addrs[0]!;
}

/** A `lookup` for http.request that answers with the checked address only (no second DNS query). */
export function pinnedLookup(addr: ResolvedAddress) {
  return (
    _host: string,
    opts: { all?: boolean } | number | undefined,
    cb: (err: Error | null, address: string | { address: string; family: number }[], family?: number) => void,
  ): void => {
    if (typeof opts === 'object' && opts?.all) cb(null, [{ address: addr.address, family: addr.family }]);
    else cb(null, addr.address, addr.family);
  };
}
