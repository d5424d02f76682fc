/**
 * The guard on outbound HTTP requests to URLs that customers give Parley (webhook endpoints, HTTP tools):
 * a request may only reach a public unicast address, unless the operator of the service allows private
 * networks. Checked at connect time, on the address actually connected to (after DNS resolution, on every
 * attempt), so a name that resolves to a private address, a redirect target (never followed anyway) or a
 * DNS answer that changes between check and use (rebinding) cannot slip through.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { AppError } from '../errors/app-error.js';

/** IPv6 ranges that carry an IPv4 address (ipaddr.js range names); such an address is as public as that IPv4 address. */
const TRANSLATED_RANGES = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

/** NAT64's well-known prefix 64:ff9b::/96 (RFC 6052 section 2.1): the IPv4 address is the last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/**
 * The IPv4 addresses embedded in `addr`, in every form a packet to it could end up at an IPv4 host:
 * - IPv4-compatible `::a.b.c.d` (`::/96`, RFC 4291 section 2.5.5.1, deprecated; `::` and `::1` included,
 *   as 0.0.0.0 and 0.0.0.1), IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 2.5.5.2), IPv4-translated
 *   `::ffff:0:a.b.c.d` (RFC 6145), NAT64 `64:ff9b::a.b.c.d` (RFC 6052): the last 32 bits;
 * - 6to4 `2002:AABB:CCDD::/48` (RFC 3056): bits 16-47;
 * - Teredo `2001:0:SSSS:SSSS:flags:port:CCCC:CCCC` (RFC 4380 section 4): the server (bits 32-63) and the
 *   client, whose address is stored inverted (the last 32 bits, XOR 0xffffffff);
 * - ISATAP interface identifiers `...:0:5efe:a.b.c.d` / `...:200:5efe:a.b.c.d` (RFC 5214 section 6.1), in any prefix.
 * Null when there is none, and `'unknown'` for NAT64's local-use prefix 64:ff9b:1::/48 (RFC 8215), whose
 * embedding depends on the translator's chosen prefix length and cannot be read.
 */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4[] | 'unknown' | null {
  const p = addr.parts;
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) return [v4(p[6]!, p[7]!)];
  switch (addr.range()) {
    case 'ipv4Mapped': case 'rfc6145': return [v4(p[6]!, p[7]!)];
    case 'rfc6052': return addr.match(NAT64_WELL_KNOWN) ? [v4(p[6]!, p[7]!)] : 'unknown';
    case '6to4': return [v4(p[1]!, p[2]!)];
    case 'teredo': return [v4(p[2]!, p[3]!), v4(~p[6]! & 0xffff, ~p[7]! & 0xffff)];
    default: return (p[4]! & 0xfdff) === 0 && p[5] === 0x5efe ? [v4(p[6]!, p[7]!)] : null;
  }
}

/**
 * True when `address` (an IPv4 or IPv6 literal, brackets allowed) is a public unicast address. Refused:
 * loopback, private (RFC 1918), carrier-grade NAT (RFC 6598), link-local (incl. 169.254.169.254, the
 * cloud metadata address), unique-local (RFC 4193), unspecified, multicast, broadcast, reserved and
 * documentation ranges (ipaddr.js classifies them). An IPv6 address that embeds an IPv4 address
 * (IPv4-compatible `::a9fe:a9fe`, IPv4-mapped, IPv4-translated, NAT64, 6to4, Teredo, ISATAP: see
 * {@link embeddedIPv4}) is classed by that IPv4 address (every one of them, for Teredo's two), so
 * `::127.0.0.1` is loopback and `::ffff:8.8.8.8` is public. Anything that does not parse is refused.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return false;
  const addr = ipaddr.parse(bare);
  if (addr.kind() === 'ipv4') return addr.range() === 'unicast';
  const v6 = addr as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded === 'unknown') return false;
  if (embedded === null) return v6.range() === 'unicast';
  const range = v6.range();
  if (range !== 'unicast' && !TRANSLATED_RANGES.has(range)) return false;
  return embedded.every((a) => a.range() === 'unicast');
}

/** What a tenant is told of a refused destination: never the name's resolved address (internal DNS). */
export const DESTINATION_REFUSED_MESSAGE = 'destination refused: private address';

/**
 * The error of a refused destination. Its message is {@link DESTINATION_REFUSED_MESSAGE}, the only text a
 * tenant sees (a delivery's `last_error`, a `tool_result`); `host` and the refused `address` are for the
 * operator's log only ({@link DestinationRefused.detail}).
 */
export class DestinationRefused extends Error {
  readonly code = 'DESTINATION_REFUSED';
  constructor(readonly host: string, readonly address: string) {
    super(DESTINATION_REFUSED_MESSAGE);
    this.name = 'DestinationRefused';
  }

  /** For the operator's log: the name, the address it resolved to, and the setting that would allow it. */
  get detail(): string {
    return `${this.host} resolves to ${this.address}, a private, loopback or reserved address`;
  }
}

/**
 * The DestinationRefused in `err` or its cause chain (undici wraps connect errors), or undefined.
 * Looks at most 5 levels deep.
 */
export function destinationRefusedIn(err: unknown): DestinationRefused | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== null && typeof e === 'object'; i++) {
    if (e instanceof DestinationRefused) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Options of createGuardedAgent. */
export interface GuardedAgentOptions {
  /** Allow loopback, private and link-local destinations (tests, self-hosted set-ups). */
  allowPrivate: boolean;
  /** TCP (and TLS) connect timeout, ms. */
  connectTimeoutMs: number;
  /** Keep-alive connections per origin. */
  connections?: number;
}

/**
 * An undici Agent whose every connection goes through the guard: an IP literal host is checked as is; a
 * name is resolved (all addresses) and refused when any of them is not public; the socket then connects
 * to a checked address only. Requests fail with a DestinationRefused cause. Redirects are never followed
 * by undici's core API, so a 3xx cannot lead elsewhere.
 */
export function createGuardedAgent(opts: GuardedAgentOptions): Agent {
  const lookup = (hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) { callback(err, []); return; }
      const list = addresses as LookupAddress[];
      if (!opts.allowPrivate) {
        const bad = list.find((a) => !isPublicAddress(a.address));
        if (bad !== undefined) { callback(new DestinationRefused(hostname, bad.address) as NodeJS.ErrnoException, []); return; }
      }
      const all = (options as { all?: boolean }).all === true;
      if (all) callback(null, list);
      else callback(null, list[0]!.address, list[0]!.family);
    });
  };
  const connect = buildConnector({ timeout: opts.connectTimeoutMs, lookup } as never);
  return new Agent({
    connections: opts.connections ?? 16,
    connect: (options, callback) => {
      const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
      if (!opts.allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) {
        callback(new DestinationRefused(host, host), null);
        return;
      }
      connect(options, callback);
    },
  });
}

/**
 * Checks a destination URL before it is stored (webhook registration, tool definition): http(s) only, no
 * credentials in it, and, unless private networks are allowed, no IP literal of a non-public range. Names
 * are checked again at every connection. Throws AppError `validation_failed` with `path`.
 */
export function checkDestinationUrl(raw: string, allowPrivate: boolean, path: string): URL {
  let url: URL;
  try { url = new URL(raw); } catch {
    throw new AppError('validation_failed', `${path} is not a valid URL.`, { errors: [{ path, message: 'invalid URL' }] });
  }
  const fail = (message: string) => new AppError('validation_failed', `${path}: ${message}.`, { errors: [{ path, message }] });
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw fail('must be an http or https URL');
  if (url.username !== '' || url.password !== '') throw fail('must not carry credentials');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) throw fail('points to a private, loopback or reserved address');
  if (!allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) throw fail('points to a private, loopback or reserved address');
  return url;
}
