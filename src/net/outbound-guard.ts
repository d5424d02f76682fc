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

/**
 * True when `address` (an IPv4 or IPv6 literal, brackets allowed) is a public unicast address. Refused:
 * loopback, private (RFC 1918), carrier-grade NAT (RFC 6598), link-local (incl. 169.254.169.254, the
 * cloud metadata address), unique-local (RFC 4193), unspecified, multicast, broadcast, reserved and
 * documentation ranges, and every IPv6 form that embeds an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
 * NAT64 `64:ff9b::/96` RFC 6052, 6to4 `2002::/16`, Teredo `2001::/32`): ipaddr.js classifies the ranges.
 * Anything that does not parse is refused.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return false;
  return ipaddr.parse(bare).range() === 'unicast';
}

/** The error of a refused destination: `code` says why, for the delivery's recorded error. */
export class DestinationRefused extends Error {
  readonly code = 'DESTINATION_REFUSED';
  constructor(host: string, address: string) {
    super(`refused: ${host} resolves to ${address}, a private, loopback or reserved address (set PARLEY_WEBHOOKS_ALLOW_PRIVATE=true to allow private networks)`);
    this.name = 'DestinationRefused';
  }
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
