/**
 * The client's address behind reverse proxies and load balancers (docs/operations.md "Behind a reverse
 * proxy"). The socket peer of a request is the proxy, so every visitor would share one rate-limit bucket;
 * the proxy names the client in a header instead. A header is only believed when the socket peer is a
 * proxy the operator trusts (PARLEY_TRUSTED_PROXIES): otherwise anyone could pick their own bucket.
 *
 * The rule (the one of Express's proxy-addr and nginx's real_ip_recursive, over RFC 7239 or
 * X-Forwarded-For): each proxy appends the address it received the request from, so the list reads
 * client, proxy 1, proxy 2, ... from left to right, and only the entries appended by trusted proxies can be
 * believed. Walking from the socket peer leftwards, the first address that is not itself trusted is the
 * client. Entries further left were written by the client (or by untrusted hops) and are ignored.
 */
import { isIP } from 'node:net';
import parseForwarded from 'forwarded-parse';
import ipaddr from 'ipaddr.js';

/** The names PARLEY_TRUSTED_PROXIES accepts besides CIDRs and addresses, with the ranges they stand for. */
export const PROXY_RANGE_NAMES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  /** 127.0.0.0/8 and ::1 (RFC 1122 3.2.1.3, RFC 4291 2.5.3). */
  loopback: ['127.0.0.0/8', '::1/128'],
  /** RFC 1918 private IPv4 networks and RFC 4193 unique local IPv6 addresses. */
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
});

/** Which header a trusted proxy names the client in: `X-Forwarded-For` (de facto) or `Forwarded` (RFC 7239). */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * A parsed PARLEY_TRUSTED_PROXIES: CIDRs (`10.0.0.0/8`, `2001:db8::/32`), single addresses (a /32 or
 * /128) and the names of {@link PROXY_RANGE_NAMES}. IPv4-mapped IPv6 addresses (`::ffff:10.1.2.3`, what a
 * dual-stack socket reports for an IPv4 peer) are judged as the IPv4 address they carry.
 */
export class TrustedProxies {
  private readonly v4: Range[] = [];
  private readonly v6: Range[] = [];

  /**
   * `entries`: the list, each a CIDR, an address or a name (case-insensitive). Throws an Error naming the
   * first entry that is none of these.
   */
  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim();
      if (entry === '') continue;
      const named = PROXY_RANGE_NAMES[entry.toLowerCase()];
      for (const cidr of named ?? [entry]) {
        const range = parseRange(cidr);
        if (range === undefined) throw new Error(`"${entry}" is not a CIDR (10.0.0.0/8), an IP address, "loopback" or "private"`);
        (range[0].kind() === 'ipv4' ? this.v4 : this.v6).push(range);
      }
    }
  }

  /** True when no proxy is trusted (the headers are never read). */
  get empty(): boolean {
    return this.v4.length === 0 && this.v6.length === 0;
  }

  /** True when `address` (an IP literal) lies in a trusted range; false for anything that does not parse. */
  trusts(address: string): boolean {
    const ip = parseAddress(address);
    return ip !== undefined && this.trustsIp(ip);
  }

  /** {@link trusts} of a parsed address. */
  trustsIp(ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    const ranges = ip.kind() === 'ipv4' ? this.v4 : this.v6;
    for (const r of ranges) if (ip.match(r)) return true;
    return false;
  }
}

/** A CIDR or a single address as an ipaddr.js range (IPv4-mapped IPv6 as IPv4), or undefined. */
function parseRange(text: string): Range | undefined {
  if (text.includes('/')) {
    try {
      const [ip, bits] = ipaddr.parseCIDR(text);
      if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96];
      return [ip, bits];
    } catch {
      return undefined;
    }
  }
  const ip = parseAddress(text);
  return ip === undefined ? undefined : [ip, ip.kind() === 'ipv4' ? 32 : 128];
}

/**
 * An IP literal as ipaddr.js parses it, IPv4-mapped IPv6 turned into IPv4; undefined for anything else.
 * Strict: four-part dotted IPv4 (never `0x7f.1`-style forms) and IPv6 as node:net accepts it.
 */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (isIP(text) === 0) return undefined;
  return ipaddr.process(text);
}

/**
 * The addresses a `Forwarded` (RFC 7239 section 4) or `X-Forwarded-For` value names, left to right:
 * each hop's `for=` node, or each comma-separated entry. A `Forwarded` node's port and IPv6 brackets are
 * dropped (`"[2001:db8::1]:4711"` -> `2001:db8::1`, `192.0.2.1:80` -> `192.0.2.1`); an entry that is not an
 * address (`unknown`, an obfuscated `_hidden` identifier, a missing `for`) is kept as `''`. Undefined when
 * a `Forwarded` value does not parse (then the header is not used at all).
 */
export function forwardedChain(header: ForwardedHeader, value: string): string[] | undefined {
  if (header === 'x-forwarded-for') return value.split(',').map((s) => stripNode(s.trim()));
  let hops: Array<Record<string, string>>;
  try {
    hops = parseForwarded(value);
  } catch {
    return undefined;
  }
  return hops.map((h) => stripNode(h.for ?? ''));
}

/** `[v6]:port` -> `v6`, `v4:port` -> `v4`, anything else as it is (`''` when it is not an address). */
function stripNode(node: string): string {
  let n = node;
  if (n.startsWith('[')) {
    const close = n.indexOf(']');
    n = close === -1 ? '' : n.slice(1, close);
  } else if (n.indexOf(':') !== -1 && n.indexOf(':') === n.lastIndexOf(':')) {
    n = n.slice(0, n.indexOf(':'));
  }
  return isIP(n) === 0 ? '' : n;
}

/**
 * Resolves the client address of a request from its socket peer and headers (see the module comment).
 * Built once from the configuration; `resolve` runs per request and per socket upgrade.
 */
export class ClientAddresses {
  constructor(private readonly trusted: TrustedProxies, private readonly header: ForwardedHeader = 'x-forwarded-for') {}

  /**
   * The client's address: `peer` (the socket peer, as uWS reports it) when no proxy is trusted, as it is
   * (no parse: the hot path pays nothing); else, normalized (`127.0.0.1`, `::1`, IPv4-mapped IPv6 as
   * IPv4): the peer when it is not trusted or sent no usable header, else the rightmost address of the
   * header that is not trusted, or the leftmost one when every address is trusted. A header entry that is
   * not an address (`unknown`) ends the walk: the last trusted address before it is the client.
   * `headers`: lower-cased names; repeated header lines joined with `, ` in order (request-head.ts).
   */
  resolve(peer: string, headers: Readonly<Record<string, string>>): string {
    if (this.trusted.empty) return peer;
    const peerIp = parseAddress(peer);
    if (peerIp === undefined) return peer;
    const peerText = peerIp.toString();
    if (!this.trusted.trustsIp(peerIp)) return peerText;
    const value = headers[this.header];
    if (value === undefined) return peerText;
    const chain = forwardedChain(this.header, value);
    if (chain === undefined) return peerText;
    let client = peerText;
    for (let i = chain.length - 1; i >= 0; i--) {
      const ip = parseAddress(chain[i]!);
      if (ip === undefined) break;
      client = ip.toString();
      if (!this.trusted.trustsIp(ip)) break;
    }
    return client;
  }
}
