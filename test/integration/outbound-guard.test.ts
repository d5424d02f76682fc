import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDestinationUrl, createGuardedAgent, DestinationRefused, destinationRefusedIn, isPublicAddress } from '../../src/net/outbound-guard.js';

describe('isPublicAddress', () => {
  it.each([
    ['8.8.8.8', true], ['1.1.1.1', true], ['2606:4700::1111', true], ['[2606:4700::1111]', true],
    ['127.0.0.1', false], ['127.255.0.1', false], ['10.0.0.1', false], ['172.16.5.4', false], ['192.168.1.1', false],
    ['100.64.0.1', false], ['169.254.169.254', false], ['0.0.0.0', false], ['255.255.255.255', false], ['224.0.0.1', false],
    ['192.0.2.1', false], ['::1', false], ['[::1]', false], ['::', false], ['fe80::1', false], ['fd12:3456::1', false],
    ['::ffff:127.0.0.1', false], ['64:ff9b::7f00:1', false], ['2002:7f00:1::', false],
    ['2001::1', false], ['not an address', false], ['', false],
    // Embedded IPv4 (security review, finding 8): classed by the IPv4 address they carry.
    // IPv4-compatible ::/96 (URL parsing turns [::127.0.0.1] into ::7f00:1):
    ['::127.0.0.1', false], ['::7f00:1', false], ['::a9fe:a9fe', false], ['[::a9fe:a9fe]', false], ['::a00:1', false],
    ['::2', false], ['::808:808', true],
    // IPv4-mapped and IPv4-translated (RFC 6145):
    ['::ffff:8.8.8.8', true], ['::ffff:a9fe:a9fe', false], ['::ffff:0:7f00:1', false], ['::ffff:0:808:808', true],
    // NAT64 well-known prefix; the local-use prefix 64:ff9b:1::/48 is never public:
    ['64:ff9b::808:808', true], ['64:ff9b::a9fe:a9fe', false], ['64:ff9b:1::808:808', false],
    // 6to4:
    ['2002:808:808::1', true], ['2002:a9fe:a9fe::1', false], ['2002:c0a8:101::1', false],
    // Teredo: server 65.54.227.120 and client 8.8.8.8 (stored inverted: f7f7:f7f7); a private server or client is refused:
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', true], ['2001:0:4136:e378:8000:63bf:80ff:fffe', false], ['2001:0:a00:1:8000:63bf:f7f7:f7f7', false],
    // ISATAP interface identifiers in a public prefix (another interface identifier is not ISATAP), and in a private one:
    ['2606:4700::5efe:7f00:1', false], ['2606:4700::200:5efe:a9fe:a9fe', false], ['2606:4700::5efe:808:808', true],
    ['2606:4700::1:5efe:7f00:1', true], ['fd00::5efe:808:808', false],
    // Only ::/96 is IPv4-compatible: a non-zero word in the first 96 bits makes an ordinary address.
    ['2606::7f00:1', true], ['0:2606::7f00:1', true], ['0:0:2606::7f00:1', true], ['0:0:0:2606::7f00:1', true],
    ['::2606:0:7f00:1', true], ['::2606:7f00:1', true],
    // Teredo: the client is the inverted last 32 bits, all of them (client 192.0.0.1, reserved, is 3fff:fffe).
    ['2001:0:4136:e378:8000:63bf:3fff:fffe', false],
    // Brackets only as a pair.
    ['[8.8.8.8', false], ['8.8.8.8]', false],
  ])('%s -> %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('checkDestinationUrl', () => {
  it.each([
    ['http://127.1/hook'], ['http://0x7f.1/hook'], ['http://[::ffff:127.0.0.1]/hook'], ['http://[::1]/hook'],
    ['http://169.254.169.254/latest/meta-data'], ['http://localhost:8080/x'], ['http://api.localhost/x'],
    ['http://[::127.0.0.1]/'], ['http://[::a9fe:a9fe]/latest/meta-data'], ['http://[64:ff9b::a9fe:a9fe]/'], ['http://[2002:7f00:1::]/'],
  ])('refuses %s when private networks are not allowed', (url) => {
    expect(() => checkDestinationUrl(url, false, 'url')).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    expect(checkDestinationUrl(url, true, 'url')).toBeInstanceOf(URL);
  });

  it('a refusal names the field: {path, message}', () => {
    expect(() => checkDestinationUrl('not a url', true, 'tools[0].url')).toThrow(expect.objectContaining({ errors: [{ path: 'tools[0].url', message: 'invalid URL' }] }));
    expect(() => checkDestinationUrl('http://[::127.0.0.1]/', false, 'url')).toThrow(expect.objectContaining({ errors: [{ path: 'url', message: 'points to a private, loopback or reserved address' }] }));
    expect(() => checkDestinationUrl('http://localhost/', false, 'url')).toThrow(expect.objectContaining({ errors: [{ path: 'url', message: 'points to a private, loopback or reserved address' }] }));
    expect(() => checkDestinationUrl('https://:pw@example.com/x', true, 'url')).toThrow(expect.objectContaining({ errors: [{ path: 'url', message: 'must not carry credentials' }] }));
    expect(() => checkDestinationUrl('https://user@example.com/x', true, 'url')).toThrow(expect.objectContaining({ errors: [{ path: 'url', message: 'must not carry credentials' }] }));
  });

  it('the refusal of a destination says "destination refused: private address"; its detail, for the log, names the address', () => {
    const refused = new DestinationRefused('vm', '127.0.0.1');
    expect([refused.message, refused.name, refused.code]).toEqual(['destination refused: private address', 'DestinationRefused', 'DESTINATION_REFUSED']);
    expect(refused.detail).toBe('vm resolves to 127.0.0.1, a private, loopback or reserved address');
    expect(destinationRefusedIn(new Error('fetch failed', { cause: new Error('connect', { cause: refused }) }))).toBe(refused);
    expect(destinationRefusedIn(new Error('fetch failed', { cause: new Error('ECONNREFUSED') }))).toBeUndefined();
    expect(destinationRefusedIn('not an error')).toBeUndefined();
  });

  it('refuses other schemes and credentials in the URL, whatever the setting', () => {
    expect(() => checkDestinationUrl('ftp://example.com/x', true, 'url')).toThrow(/http or https/);
    expect(() => checkDestinationUrl('https://user:pw@example.com/x', true, 'url')).toThrow(/credentials/);
    expect(() => checkDestinationUrl('not a url', true, 'url')).toThrow(/not a valid URL/);
  });

  it('accepts a public https URL', () => {
    expect(checkDestinationUrl('https://hooks.example.com/parley', false, 'url').hostname).toBe('hooks.example.com');
  });
});

describe('createGuardedAgent (a real receiver on loopback)', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => { hits++; res.end('ok'); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => { await new Promise((r) => server.close(r)); });

  const refusal = async (url: string) => {
    const agent = createGuardedAgent({ allowPrivate: false, connectTimeoutMs: 2000 });
    try {
      await request(url, { dispatcher: agent });
      return 'delivered';
    } catch (err) {
      const e = err as { code?: string; cause?: { code?: string } };
      return e.code ?? e.cause?.code ?? String(err);
    } finally {
      await agent.close();
    }
  };

  it('refuses loopback by literal, by short form and by name, and never reaches the receiver', async () => {
    const before = hits;
    expect(await refusal(`http://127.0.0.1:${port}/`)).toBe('DESTINATION_REFUSED');
    expect(await refusal(`http://127.1:${port}/`)).toBe('DESTINATION_REFUSED');
    expect(await refusal(`http://localhost:${port}/`)).toBe('DESTINATION_REFUSED');
    expect(await refusal(`http://[::127.0.0.1]:${port}/`)).toBe('DESTINATION_REFUSED');
    expect(hits).toBe(before);
  });

  it('connects when private networks are allowed', async () => {
    const agent = createGuardedAgent({ allowPrivate: true, connectTimeoutMs: 2000 });
    const res = await request(`http://localhost:${port}/`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    await agent.close();
  });
});
