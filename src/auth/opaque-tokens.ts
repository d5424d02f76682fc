/**
 * Opaque bearer secrets (API.md "Credentials"): refresh tokens `rt_...`, socket tickets `wst_...` and
 * visitor tokens `vt_...` (one public conversation each).
 * Each is the prefix and 32 bytes (256 bits) from the CSPRNG in base64url (43 characters), stored only
 * as its SHA-256 hex. A fast hash is right for them: they carry 256 bits of entropy, there is no
 * dictionary to guess from (unlike passwords).
 */
import { hash, randomBytes } from 'node:crypto';

/** The kinds of opaque token and their prefixes. */
export type OpaquePrefix = 'rt' | 'wst' | 'vt';

const SHAPES: Record<OpaquePrefix, RegExp> = {
  rt: /^rt_[A-Za-z0-9_-]{43}$/,
  wst: /^wst_[A-Za-z0-9_-]{43}$/,
  vt: /^vt_[A-Za-z0-9_-]{43}$/,
};

/** A new token `<prefix>_<43 base64url chars>`. */
export function newOpaqueToken(prefix: OpaquePrefix): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** True when `token` has the shape of a `prefix` token (checked before any lookup). */
export function isOpaqueToken(token: string, prefix: OpaquePrefix): boolean {
  return SHAPES[prefix].test(token);
}

/** The stored form of an opaque token: SHA-256 hex (64 characters), by node:crypto's one-shot `hash` (see hashApiKey). */
export function hashOpaqueToken(token: string): string {
  return hash('sha256', token, 'hex');
}
