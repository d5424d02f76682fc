/**
 * The client-address rule behind proxies (src/net/trusted-proxies.ts): which ranges PARLEY_TRUSTED_PROXIES
 * names, how the Forwarded and X-Forwarded-For chains read, and which address is the client.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ClientAddresses, forwardedChain, parseAddress, TrustedProxies } from '../../src/net/trusted-proxies.js';

const xff = (value: string) => ({ 'x-forwarded-for': value });

describe('TrustedProxies', () => {
  it('loopback is 127.0.0.0/8 and ::1, IPv4-mapped forms included', () => {
    const t = new TrustedProxies(['loopback']);
    for (const a of ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:7f00:0001']) expect(t.trusts(a), a).toBe(true);
    for (const a of ['128.0.0.1', '126.255.255.255', '::2', '10.0.0.1', '::ffff:10.0.0.1']) expect(t.trusts(a), a).toBe(false);
  });

  it('private is RFC 1918 and fc00::/7, nothing public', () => {
    const t = new TrustedProxies(['PRIVATE']);
    for (const a of ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', 'fc00::1', 'fdff:ffff::1', '::ffff:192.168.0.9']) expect(t.trusts(a), a).toBe(true);
    for (const a of ['9.255.255.255', '11.0.0.0', '172.15.255.255', '172.32.0.0', '192.169.0.0', 'fe00::1', '127.0.0.1', '8.8.8.8', '2001:db8::1']) expect(t.trusts(a), a).toBe(false);
  });

  it('takes CIDRs and single addresses of both families, with spaces, and nothing else', () => {
    const t = new TrustedProxies([' 203.0.113.0/24', '2001:db8:1::/48 ', '198.51.100.7', '2001:db8::9', '::ffff:192.0.2.0/120', '']);
    for (const a of ['203.0.113.0', '203.0.113.255', '2001:db8:1:ffff::1', '198.51.100.7', '2001:db8::9', '192.0.2.200']) expect(t.trusts(a), a).toBe(true);
    for (const a of ['203.0.114.0', '2001:db8:2::1', '198.51.100.8', '2001:db8::a', '192.0.3.0', 'not an address', '']) expect(t.trusts(a), a).toBe(false);
    expect(t.empty).toBe(false);
    expect(new TrustedProxies(['', ' ']).empty).toBe(true);
    expect(new TrustedProxies(['10.0.0.0/8']).empty).toBe(false);
    expect(new TrustedProxies(['::1']).empty).toBe(false);
    // The whole IPv4-mapped space, written as IPv6, is every IPv4 address.
    expect(new TrustedProxies(['::ffff:0.0.0.0/96']).trusts('8.8.8.8')).toBe(true);
    for (const bad of ['10.0.0.0/33', 'localhost', '10.0.0', '::1/129', '10.0.0.1/8x']) {
      expect(() => new TrustedProxies([bad]), bad).toThrow(`"${bad}" is not a CIDR`);
    }
  });

  it('PARLEY_TRUSTED_PROXIES is a comma-separated list; a bad entry stops the start with its name', () => {
    const config = loadConfig({ PARLEY_TRUSTED_PROXIES: 'loopback, 10.1.0.0/16' });
    expect(config.proxies.trusted.trusts('10.1.2.3')).toBe(true);
    expect(config.proxies.trusted.trusts('::1')).toBe(true);
    expect(config.proxies.trusted.trusts('10.2.0.1')).toBe(false);
    expect(config.proxies.header).toBe('x-forwarded-for');
    expect(loadConfig({}).proxies.trusted.empty).toBe(true);
    expect(() => loadConfig({ PARLEY_TRUSTED_PROXIES: 'loopback,proxy.internal' })).toThrow(/PARLEY_TRUSTED_PROXIES: "proxy.internal" is not a CIDR/);
    expect(loadConfig({ PARLEY_FORWARDED_HEADER: 'forwarded' }).proxies.header).toBe('forwarded');
    expect(() => loadConfig({ PARLEY_FORWARDED_HEADER: 'x-real-ip' })).toThrow(/PARLEY_FORWARDED_HEADER/);
  });
});

describe('forwardedChain', () => {
  it('reads X-Forwarded-For left to right, ports dropped, non-addresses as empty', () => {
    expect(forwardedChain('x-forwarded-for', '203.0.113.7, 10.0.0.2,192.0.2.1')).toEqual(['203.0.113.7', '10.0.0.2', '192.0.2.1']);
    expect(forwardedChain('x-forwarded-for', '203.0.113.7:5123, 2001:db8::1, [2001:db8::2]:80, unknown, ')).toEqual(['203.0.113.7', '2001:db8::1', '2001:db8::2', '', '']);
  });

  it('reads the for= of each Forwarded hop (RFC 7239 section 4 and 6), quoted, bracketed, with ports', () => {
    expect(forwardedChain('forwarded', 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711", For="198.51.100.17:8080"'))
      .toEqual(['192.0.2.60', '2001:db8:cafe::17', '198.51.100.17']);
    expect(forwardedChain('forwarded', 'for=unknown, for=_hidden, proto=https, for="[2001:db8::1"')).toEqual(['', '', '', '']);
    // RFC 7239 section 6: a node with a port or an IPv6 address must be quoted; unquoted, the header does not parse.
    expect(forwardedChain('forwarded', 'for=198.51.100.17:8080')).toBeUndefined();
    expect(forwardedChain('forwarded', 'for="192.0.2.1')).toBeUndefined();
    expect(forwardedChain('forwarded', 'not a header')).toBeUndefined();
  });
});

describe('ClientAddresses.resolve', () => {
  // Built in each test (not at collection time), so mutation testing sees which test runs the constructor.
  let behindLoopback: ClientAddresses;
  beforeEach(() => { behindLoopback = new ClientAddresses(new TrustedProxies(['loopback', '10.0.0.0/8'])); });

  it('without trusted proxies: the socket peer as given, whatever the headers say', () => {
    const none = new ClientAddresses(new TrustedProxies([]));
    expect(none.resolve('0000:0000:0000:0000:0000:ffff:7f00:0001', xff('203.0.113.7'))).toBe('0000:0000:0000:0000:0000:ffff:7f00:0001');
    expect(none.resolve('127.0.0.1', { forwarded: 'for=203.0.113.7' })).toBe('127.0.0.1');
  });

  it('an untrusted peer is the client: its headers are ignored (a client cannot pick its bucket)', () => {
    expect(behindLoopback.resolve('198.51.100.4', xff('203.0.113.7'))).toBe('198.51.100.4');
    expect(behindLoopback.resolve('0000:0000:0000:0000:0000:ffff:c633:6404', xff('203.0.113.7'))).toBe('198.51.100.4');
  });

  it('a trusted peer: the rightmost address that is not trusted', () => {
    expect(behindLoopback.resolve('127.0.0.1', xff('203.0.113.7'))).toBe('203.0.113.7');
    // What the client wrote itself stays on the left of what the proxies appended.
    expect(behindLoopback.resolve('127.0.0.1', xff('6.6.6.6, 203.0.113.7, 10.0.0.3'))).toBe('203.0.113.7');
    expect(behindLoopback.resolve('::ffff:127.0.0.1', xff('2001:db8::1, 10.0.0.3'))).toBe('2001:db8::1');
    // Normalized: a mapped IPv4 address counts as the IPv4 address, so it shares that bucket.
    expect(behindLoopback.resolve('127.0.0.1', xff('::ffff:203.0.113.7'))).toBe('203.0.113.7');
  });

  it('a trusted peer with no header, an empty or broken one: the peer, normalized', () => {
    expect(behindLoopback.resolve('0000:0000:0000:0000:0000:ffff:7f00:0001', {})).toBe('127.0.0.1');
    expect(behindLoopback.resolve('127.0.0.1', xff(''))).toBe('127.0.0.1');
    expect(behindLoopback.resolve('127.0.0.1', xff('unknown'))).toBe('127.0.0.1');
  });

  it('every address trusted: the leftmost; a non-address ends the walk at the last trusted hop', () => {
    expect(behindLoopback.resolve('127.0.0.1', xff('10.0.0.9, 10.0.0.3'))).toBe('10.0.0.9');
    expect(behindLoopback.resolve('127.0.0.1', xff('203.0.113.7, unknown, 10.0.0.3'))).toBe('10.0.0.3');
  });

  it('reads only the header it is told: Forwarded, or X-Forwarded-For (the other is the client\'s to forge)', () => {
    const rfc = new ClientAddresses(new TrustedProxies(['loopback']), 'forwarded');
    expect(rfc.resolve('127.0.0.1', { forwarded: 'for=6.6.6.6, for="[2001:db8::5]:443";proto=https', 'x-forwarded-for': '198.51.100.1' })).toBe('2001:db8::5');
    expect(rfc.resolve('127.0.0.1', { 'x-forwarded-for': '198.51.100.1' })).toBe('127.0.0.1');
    expect(rfc.resolve('127.0.0.1', { forwarded: 'for=192.0.2.1:80' })).toBe('127.0.0.1');
    expect(behindLoopback.resolve('127.0.0.1', { forwarded: 'for=198.51.100.1', 'x-forwarded-for': '203.0.113.7' })).toBe('203.0.113.7');
  });

  it('a peer that is not an address at all is kept as it is', () => {
    expect(behindLoopback.resolve('', xff('203.0.113.7'))).toBe('');
    expect(parseAddress('1.2.3')).toBeUndefined();
    expect(parseAddress('0x7f.0.0.1')).toBeUndefined();
  });
});
