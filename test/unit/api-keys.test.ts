import { describe, expect, it } from 'vitest';
import { API_KEY_LENGTH, containsApiKey, digestsEqual, generateApiKey, hashApiKey, isWellFormedApiKey } from '../../src/auth/api-keys.js';
import { hashOpaqueToken, isOpaqueToken, newOpaqueToken } from '../../src/auth/opaque-tokens.js';

describe('API keys', () => {
  it('have the API.md shape: sk_ + 30 base62 + 6-char checksum', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^sk_[0-9A-Za-z]{36}$/);
    expect(key.length).toBe(39); // sk_ + 30 random + 6 checksum
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('a changed character anywhere fails the checksum before any lookup', () => {
    const key = generateApiKey();
    for (const i of [3, 10, 32, 38]) {
      const c = key[i] === 'a' ? 'b' : 'a';
      expect(isWellFormedApiKey(key.slice(0, i) + c + key.slice(i + 1))).toBe(false);
    }
    expect(isWellFormedApiKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(`pk_${key.slice(3)}`)).toBe(false);
  });

  it('are random and stored as a SHA-256 hex digest', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key.slice(3, 12));
    expect(digestsEqual(hashApiKey(key), hashApiKey(key))).toBe(true);
    expect(digestsEqual(hashApiKey(key), hashApiKey(generateApiKey()))).toBe(false);
    expect(digestsEqual('ab', 'abc')).toBe(false);
  });

  it('hash to the SHA-256 hex digest, so keys stored by any earlier build still match (FIPS 180-2 test vector "abc")', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashOpaqueToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('containsApiKey finds a real key anywhere in a text, and nothing else', () => {
    const key = generateApiKey();
    const badChecksum = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    expect(containsApiKey(key)).toBe(true);
    expect(containsApiKey(`Bearer ${key}`)).toBe(true);
    expect(containsApiKey(`x${key}yz`)).toBe(true);
    expect(containsApiKey(`sk_ and then ${key}`)).toBe(true);
    expect(containsApiKey('sk_ prefix')).toBe(false);
    expect(containsApiKey('sk_notakey')).toBe(false);
    expect(containsApiKey(badChecksum)).toBe(false);
    expect(containsApiKey(`sk_${'A'.repeat(36)}`)).toBe(false);
    expect(containsApiKey('')).toBe(false);
  });
});

describe('opaque tokens (refresh rt_, socket ticket wst_, visitor vt_)', () => {
  const body = 'A'.repeat(21) + '-_' + 'z9'.repeat(10); // 43 base64url characters

  it('are the prefix and 43 base64url characters, and only their own kind passes', () => {
    for (const prefix of ['rt', 'wst', 'vt'] as const) {
      const token = newOpaqueToken(prefix);
      expect(token).toMatch(new RegExp(`^${prefix}_[A-Za-z0-9_-]{43}$`));
      expect(isOpaqueToken(token, prefix)).toBe(true);
      expect(isOpaqueToken(`${prefix}_${body}`, prefix)).toBe(true);
    }
    expect(isOpaqueToken(newOpaqueToken('rt'), 'vt')).toBe(false);
    expect(isOpaqueToken(newOpaqueToken('vt'), 'wst')).toBe(false);
  });

  it('refuse anything around, short of or other than the 43 characters', () => {
    for (const prefix of ['rt', 'wst', 'vt'] as const) {
      const good = `${prefix}_${body}`;
      expect(isOpaqueToken(`x${good}`, prefix)).toBe(false); // text before
      expect(isOpaqueToken(`${good}x`, prefix)).toBe(false); // text after
      expect(isOpaqueToken(`${prefix}_${body.slice(1)}`, prefix)).toBe(false); // 42 characters
      expect(isOpaqueToken(`${prefix}_A`, prefix)).toBe(false);
      expect(isOpaqueToken(`${prefix}_${'!'.repeat(43)}`, prefix)).toBe(false); // not base64url
      expect(isOpaqueToken(`${prefix}_${body.slice(0, 42)}=`, prefix)).toBe(false);
    }
  });
});
