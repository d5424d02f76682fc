import { randomFillSync } from 'node:crypto';

/**
 * Identifier prefixes of API.md "Conventions", `rtf` (refresh-token families) and `proc` (a running Parley
 * process: src/cluster/process-registry.ts), the last two never shown by the API.
 */
export type IdPrefix =
  | 'org' | 'usr' | 'agt' | 'conv' | 'msg' | 'turn' | 'kb' | 'doc' | 'chk'
  | 'key' | 'whe' | 'evt' | 'dlv' | 'req' | 'rtf' | 'trun' | 'proc' | 'inv';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'; // Crockford base32, sorts like the numbers it encodes

let lastMs = 0;
let seq = 0;
// Random bytes are drawn from the CSPRNG in 4 KiB batches: one syscall per ~340 ids, not one per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomChunk(n: number): Buffer {
  if (poolOffset + n > pool.length) { randomFillSync(pool); poolOffset = 0; }
  const chunk = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return chunk;
}

/**
 * A new opaque identifier `<prefix>_<26 chars>`: 10 chars of millisecond time then 16 chars of which the
 * first 4 are a per-millisecond counter and the rest random (ULID layout), so ids made later by this
 * process sort after earlier ones, even within one millisecond.
 */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now === lastMs) seq++;
  else { lastMs = now; seq = 0; }
  let out = '';
  let t = now;
  for (let i = 0; i < 10; i++) { out = ALPHABET[t % 32] + out; t = Math.floor(t / 32); }
  let s = seq;
  let counter = '';
  for (let i = 0; i < 4; i++) { counter = ALPHABET[s % 32] + counter; s = Math.floor(s / 32); }
  const rnd = randomChunk(12);
  let tail = '';
  for (let i = 0; i < 12; i++) tail += ALPHABET[rnd[i]! % 32];
  return `${prefix}_${out}${counter}${tail}`;
}
