/**
 * A byte-pair-encoding token counter whose cost is linear (times a log) in the size of its input,
 * for any script.
 *
 * Why not js-tiktoken's `encode`: its merge loop rescans every pair of a pre-token after each merge and
 * builds a string key per probe (`bytes.slice().join(",")`), so one pre-token of n bytes costs
 * O(n^2) key constructions, and each `encode` call also pays ~0.35 ms of set-up. A whitespace-free
 * run of CJK or emoji is one pre-token in the o200k pattern; 32,000 such characters took 3 to 7 s of
 * CPU, a run of 32,000 spaces 250 s. Cutting runs into pieces does not help (the per-call set-up then
 * dominates: ~1 s per 32,000 CJK characters).
 *
 * This counter uses the same public rank data (the `TiktokenBPE` object of js-tiktoken's
 * `ranks/o200k_base`) and gives the same counts as `new Tiktoken(ranks).encode(text, [], []).length`
 * (special-token strings counted as text): it pre-tokenizes with the encoding's own pattern, then
 * merges each pre-token with a binary heap keyed by (rank, position) over a linked list of parts,
 * which picks the same pair as tiktoken's loop at every step (the lowest rank, leftmost on ties).
 */

/** Rank data of a tiktoken encoding (the shape of js-tiktoken's `ranks/*` modules). */
export interface BpeRankData {
  /** Pre-tokenization regex source (Unicode property escapes: compiled with the `u` flag). */
  pat_str: string;
  /**
   * Lines of `<name> <first rank> <token> <token> ...`, tokens in base64, ranks consecutive from
   * the first (the js-tiktoken compressed form).
   */
  bpe_ranks: string;
}

const TWO_POW_32 = 4294967296;

/** Scratch arrays reused by every count (counting is synchronous, so one set per thread suffices). */
let nextOf = new Int32Array(256);
let prevOf = new Int32Array(256);
let pairRank = new Int32Array(256);
const heap: number[] = [];

function heapPush(key: number): void {
  let i = heap.length;
  heap.push(key);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = heap[parent]!;
    if (p <= key) break;
    heap[i] = p;
    i = parent;
  }
  heap[i] = key;
}

function heapPop(): number {
  const top = heap[0]!;
  const last = heap.pop()!;
  const n = heap.length;
  if (n > 0) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]! < heap[l]! ? r : l;
      if (heap[c]! >= last) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
  }
  return top;
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Counts tokens of one encoding. Build once (parsing the ranks takes a few hundred ms), then reuse. */
export class BpeCounter {
  /** Token bytes (as a latin1 string: one char per byte) -> rank. */
  private readonly ranks = new Map<string, number>();
  private readonly maxTokenBytes: number;
  private readonly pattern: RegExp;
  /** Rank-table probes made so far: a cost measure for tests (linear in the bytes counted). */
  lookups = 0;

  /** @throws SyntaxError when `data.pat_str` is not a valid regex. */
  constructor(data: BpeRankData) {
    let longest = 1;
    for (const line of data.bpe_ranks.split('\n')) {
      if (line.length === 0) continue;
      const fields = line.split(' ');
      const first = Number.parseInt(fields[1] ?? '', 10);
      for (let i = 2; i < fields.length; i++) {
        const bytes = Buffer.from(fields[i]!, 'base64').toString('latin1');
        this.ranks.set(bytes, first + i - 2);
        if (bytes.length > longest) longest = bytes.length;
      }
    }
    this.maxTokenBytes = longest;
    this.pattern = new RegExp(data.pat_str, 'gu');
  }

  /**
   * Tokens in `text`: the length `encode(text)` would have, special-token strings counted as plain
   * text. Lone surrogates count as U+FFFD (as the UTF-8 encoder writes them).
   *
   * @returns token count (unit: tokens), an integer >= 0. Never throws.
   */
  count(text: string): number {
    if (text.length === 0) return 0;
    const pattern = this.pattern;
    pattern.lastIndex = 0;
    let total = 0;
    let m: RegExpExecArray | null;
    while ((m = pattern.exec(text)) !== null) {
      const piece = m[0];
      if (piece.length === 0) { pattern.lastIndex++; continue; }
      total += this.countPiece(ASCII_ONLY.test(piece) ? piece : Buffer.from(piece, 'utf8').toString('latin1'));
    }
    return total;
  }

  /** Rank of `s[from..to)`, or -1 when no token has those bytes. */
  private rank(s: string, from: number, to: number): number {
    if (to - from > this.maxTokenBytes) return -1;
    this.lookups++;
    const r = this.ranks.get(s.slice(from, to));
    return r === undefined ? -1 : r;
  }

  /** Tokens of one pre-token given as bytes (a latin1 string). */
  private countPiece(s: string): number {
    const n = s.length;
    if (n <= 1) return n;
    this.lookups++;
    if (this.ranks.has(s)) return 1;
    if (nextOf.length < n + 1) {
      const size = Math.max(n + 1, nextOf.length * 2);
      nextOf = new Int32Array(size);
      prevOf = new Int32Array(size);
      pairRank = new Int32Array(size);
    }
    heap.length = 0;
    // Parts are identified by their start offset; nextOf[i] is the start of the following part (n at the end).
    for (let i = 0; i < n; i++) {
      nextOf[i] = i + 1;
      prevOf[i] = i - 1;
      const r = i + 1 < n ? this.rank(s, i, i + 2) : -1;
      pairRank[i] = r;
      if (r >= 0) heapPush(r * TWO_POW_32 + i);
    }
    let parts = n;
    while (heap.length > 0) {
      const key = heapPop();
      const r = Math.floor(key / TWO_POW_32);
      const left = key - r * TWO_POW_32;
      // Stale entry: the pair starting at `left` changed since (ranks are unique per byte string).
      if (pairRank[left] !== r) continue;
      const right = nextOf[left]!;
      const end = nextOf[right]!;
      nextOf[left] = end;
      if (end < n) prevOf[end] = left;
      pairRank[right] = -1;
      parts--;
      const after = end < n ? this.rank(s, left, nextOf[end]!) : -1;
      pairRank[left] = after;
      if (after >= 0) heapPush(after * TWO_POW_32 + left);
      const before = prevOf[left]!;
      if (before >= 0) {
        const rb = this.rank(s, before, end);
        pairRank[before] = rb;
        if (rb >= 0) heapPush(rb * TWO_POW_32 + before);
      }
    }
    return parts;
  }
}
