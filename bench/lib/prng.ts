/**
 * A seeded pseudo-random generator for reproducible runs (the bench's synthetic data, the chaos test's
 * schedule): mulberry32, 32 bits of state. Not for anything secret.
 *
 * @param seed any integer; the same seed gives the same sequence.
 * @returns a function giving numbers uniform in [0, 1).
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
