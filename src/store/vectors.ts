/**
 * Embedding vectors as the stores keep them, and the brute-force nearest-neighbour scan the stores run
 * over them (KnowledgePort.vectorSearch). Store-agnostic: any adapter encodes vectors with
 * {@link vectorToBytes} and ranks them with {@link TopK} and {@link cosine}.
 */

/** True when this machine stores floats little-endian (x86-64, arm64: every platform Node.js 20 ships for). */
const LITTLE_ENDIAN = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;

/**
 * The bytes of `v` as little-endian IEEE 754 float32, 4 bytes per dimension (the `chunks.embedding`
 * BLOB). A view of `v`'s memory on little-endian machines (no copy), a converted copy elsewhere.
 */
export function vectorToBytes(v: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  const out = new Uint8Array(v.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i]!, true);
  return out;
}

/**
 * The vector stored as `bytes` (see {@link vectorToBytes}). A view without copying when the bytes are
 * 4-byte aligned on a little-endian machine; a copy otherwise.
 *
 * @throws RangeError when the length is not a multiple of 4.
 */
export function bytesToVector(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new RangeError(`a float32 vector needs a multiple of 4 bytes, got ${bytes.byteLength}`);
  if (LITTLE_ENDIAN) {
    if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    return new Float32Array(bytes.slice().buffer);
  }
  const out = new Float32Array(bytes.byteLength / 4);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** Euclidean norm of `v`. */
export function norm(v: Float32Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}

/**
 * Cosine similarity of `a` and `b`, in [-1, 1]; `aNorm` is `norm(a)` when the caller has it (the query
 * of a scan). 0 when the lengths differ or either vector is all zeros (no direction to compare).
 */
export function cosine(a: Float32Array, b: Float32Array, aNorm = norm(a)): number {
  if (a.length !== b.length || aNorm === 0) return 0;
  let dot = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    const y = b[i]!;
    dot += a[i]! * y;
    bb += y * y;
  }
  return bb === 0 ? 0 : dot / (aNorm * Math.sqrt(bb));
}

/**
 * The `k` best items offered, by descending score (ties: the item offered first wins). O(k) per offer
 * that makes the cut, which is cheap for the k of a search (50) next to the cosine itself.
 */
export class TopK<T> {
  readonly #items: Array<{ item: T; score: number }> = [];

  constructor(readonly k: number) {}

  /** The score an item must beat to enter; -Infinity while fewer than k are kept. */
  get threshold(): number {
    return this.#items.length < this.k ? -Infinity : this.#items[this.#items.length - 1]!.score;
  }

  /** Keeps `item` when it is among the best k so far. */
  offer(item: T, score: number): void {
    if (this.k <= 0 || !(score > this.threshold)) return;
    let i = this.#items.length;
    while (i > 0 && this.#items[i - 1]!.score < score) i--;
    this.#items.splice(i, 0, { item, score });
    if (this.#items.length > this.k) this.#items.pop();
  }

  /** The kept items, best first. */
  sorted(): Array<{ item: T; score: number }> {
    return [...this.#items];
  }
}
