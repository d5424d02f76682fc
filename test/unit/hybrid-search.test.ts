/**
 * Reciprocal rank fusion (src/knowledge/hybrid-search.ts) with hand-computed scores, the vector helpers
 * of the stores (src/store/vectors.ts), and the mock upstream's deterministic embeddings the integration
 * tests rely on.
 */
import { describe, expect, it } from 'vitest';
import { createKnowledgeSearch, reciprocalRankFusion, RRF_K } from '../../src/knowledge/hybrid-search.js';
import { chunkEmbeddingInput, type ChunkEmbedder } from '../../src/knowledge/chunk-embedder.js';
import type { ChunkHit } from '../../src/store/records.js';
import { bytesToVector, cosine, TopK, vectorToBytes } from '../../src/store/vectors.js';
import { MOCK_EMBEDDING_DIMS, mockEmbedding } from '../helpers/mock-upstream.js';

const hit = (id: string, score = 0): ChunkHit => ({ document_id: `doc_${id}`, chunk_id: id, title: `T${id}`, heading: '', text: `text ${id}`, page: null, score });
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

describe('reciprocalRankFusion', () => {
  it('sums 1 / (60 + rank) over the rankings, best first (hand-computed)', () => {
    // bm25: a, b, c; vectors: c, a, d.
    // a: 1/61 + 1/62 = 0.032522... ; c: 1/63 + 1/61 = 0.032266... ; b: 1/62 = 0.016129... ; d: 1/63 = 0.015873...
    const fused = reciprocalRankFusion([[hit('a', 9), hit('b', 8), hit('c', 7)], [hit('c', 0.9), hit('a', 0.8), hit('d', 0.7)]]);
    expect(fused.map((h) => h.chunk_id)).toEqual(['a', 'c', 'b', 'd']);
    expect(fused.map((h) => h.score)).toEqual([0.032522, 0.032266, 0.016129, 0.015873]);
    expect(fused[0]!.score).toBe(round6(1 / 61 + 1 / 62));
    expect(fused[1]!.score).toBe(round6(1 / 63 + 1 / 61));
    expect(RRF_K).toBe(60);
  });

  it('keeps the hit of the first ranking that has the passage, with the fused score in place of its own', () => {
    const fromBm25 = { ...hit('a', 12.5), text: 'bm25 copy' };
    const fromVectors = { ...hit('a', 0.99), text: 'vector copy' };
    const [only] = reciprocalRankFusion([[fromBm25], [fromVectors]]);
    expect(only).toEqual({ ...fromBm25, score: round6(2 / 61) });
  });

  it('breaks ties by first appearance, ranking by ranking', () => {
    // x is 1st in ranking one, y 1st in ranking two: both 1/61.
    expect(reciprocalRankFusion([[hit('x')], [hit('y')]]).map((h) => h.chunk_id)).toEqual(['x', 'y']);
    expect(reciprocalRankFusion([[hit('y')], [hit('x')]]).map((h) => h.chunk_id)).toEqual(['y', 'x']);
  });

  it('uses the given k, counts a passage repeated within one ranking once, and fuses nothing into nothing', () => {
    // k = 0: a = 1/1 + 1/2 = 1.5, b = 1/2 = 0.5 (its repeat at rank 3 is ignored).
    const fused = reciprocalRankFusion([[hit('a'), hit('b'), hit('b')], [hit('c'), hit('a')]], 0);
    expect(fused.map((h) => [h.chunk_id, h.score])).toEqual([['a', 1.5], ['c', 1], ['b', 0.5]]);
    expect(reciprocalRankFusion([])).toEqual([]);
    expect(reciprocalRankFusion([[], []])).toEqual([]);
    expect(() => reciprocalRankFusion([[hit('a')]], -1)).toThrow(RangeError);
  });

  it('a passage only one ranking found can still beat one both found lower down', () => {
    // p: 1st in bm25 only = 1/61 = 0.016393; q: 40th in both = 2/100 = 0.02 (q wins); r: 1st in vectors only.
    const bm25 = [hit('p'), ...Array.from({ length: 38 }, (_, i) => hit(`f${i}`)), hit('q')];
    const vectors = [hit('r'), ...Array.from({ length: 38 }, (_, i) => hit(`g${i}`)), hit('q')];
    const fused = reciprocalRankFusion([bm25, vectors]);
    expect(fused.slice(0, 3).map((h) => h.chunk_id)).toEqual(['q', 'p', 'r']);
    expect(fused[0]!.score).toBe(0.02);
  });
});

describe('store vectors', () => {
  it('encodes float32 little-endian and decodes what it encoded, aligned or not', () => {
    const v = new Float32Array([1, -2.5, 0.1]);
    const bytes = vectorToBytes(v);
    expect([...bytes.subarray(0, 8)]).toEqual([0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0]);
    expect([...bytesToVector(bytes)]).toEqual([...v]);
    const shifted = new Uint8Array(bytes.byteLength + 1);
    shifted.set(bytes, 1);
    expect([...bytesToVector(shifted.subarray(1))]).toEqual([...v]);
    expect(() => bytesToVector(new Uint8Array(5))).toThrow(RangeError);
  });

  it('cosine is 1 for the same direction, -1 opposite, 0 orthogonal, zero-length or of another dimension', () => {
    const a = new Float32Array([3, 4]);
    expect(cosine(a, new Float32Array([6, 8]))).toBeCloseTo(1, 12);
    expect(cosine(a, new Float32Array([-3, -4]))).toBeCloseTo(-1, 12);
    expect(cosine(a, new Float32Array([-4, 3]))).toBe(0);
    expect(cosine(a, new Float32Array([0, 0]))).toBe(0);
    expect(cosine(a, new Float32Array([1, 2, 3]))).toBe(0);
    expect(cosine(a, new Float32Array([1, 0]))).toBeCloseTo(0.6, 12);
  });

  it('TopK keeps the k best by score, best first, the first offered winning ties', () => {
    const top = new TopK<string>(3);
    for (const [item, score] of [['a', 0.1], ['b', 0.9], ['c', 0.5], ['d', 0.5], ['e', 0.95], ['f', -1], ['g', Number.NaN]] as const) top.offer(item, score);
    expect(top.sorted()).toEqual([{ item: 'e', score: 0.95 }, { item: 'b', score: 0.9 }, { item: 'c', score: 0.5 }]);
    const none = new TopK<string>(0);
    none.offer('a', 1);
    expect(none.sorted()).toEqual([]);
  });
});

describe('mock upstream embeddings', () => {
  it('are deterministic unit vectors where synonyms meet and unrelated words do not', () => {
    const car = mockEmbedding('How do I fix my car?');
    expect(car).toHaveLength(MOCK_EMBEDDING_DIMS);
    expect([...car]).toEqual([...mockEmbedding('How do I fix my car?')]);
    expect(Math.hypot(...car)).toBeCloseTo(1, 6);
    expect(cosine(car, mockEmbedding('Automobile maintenance'))).toBeCloseTo(1, 6);
    expect(cosine(car, mockEmbedding('Baking sourdough bread at home'))).toBeLessThan(0.5);
    expect([...mockEmbedding('the and of')].every((x) => x === 0)).toBe(true);
  });

  it('chunk inputs carry the title and heading path with the text', () => {
    expect(chunkEmbeddingInput('Guide', { heading: 'Setup > Install', text: 'Run it.' })).toBe('Guide\nSetup > Install\nRun it.');
    expect(chunkEmbeddingInput('Guide', { heading: '', text: 'Run it.' })).toBe('Guide\nRun it.');
  });
});

describe('createKnowledgeSearch', () => {
  type Call = unknown[];
  /** A store port that records its calls and answers fixed rankings. */
  function port(lexical: ChunkHit[], semantic: ChunkHit[]) {
    const calls: { search: Call[]; vector: Call[] } = { search: [], vector: [] };
    return {
      calls,
      knowledge: {
        search: async (...a: Call) => { calls.search.push(a); return lexical.slice(0, a[3] as number); },
        vectorSearch: async (...a: Call) => { calls.vector.push(a); return semantic.slice(0, a[4] as number); },
      } as unknown as Parameters<typeof createKnowledgeSearch>[0]['knowledge'],
    };
  }
  /** An embedder that answers a fixed vector, or fails. */
  function embedder(fail?: string) {
    const asked: Call[] = [];
    const e = {
      model: 'emb-1',
      asked,
      embedQuery: async (...a: Call) => { asked.push(a); if (fail) throw new Error(fail); return new Float32Array([1, 0]); },
    };
    return e as unknown as ChunkEmbedder & { asked: Call[] };
  }

  it('without an embedder is the store bm25 search itself, with the same arguments', async () => {
    const p = port([hit('a', 3), hit('b', 2)], [hit('z')]);
    const search = createKnowledgeSearch({ knowledge: p.knowledge });
    expect(await search('org_1', ['kb_1'], 'q', 1)).toEqual([hit('a', 3)]);
    expect(p.calls.search).toEqual([['org_1', ['kb_1'], 'q', 1]]);
    expect(p.calls.vector).toEqual([]);
  });

  it('fuses bm25 and vector rankings (depth 50 each by default) and returns the best k', async () => {
    const p = port([hit('a', 9), hit('b', 8), hit('c', 7)], [hit('c', 0.9), hit('a', 0.8)]);
    const e = embedder();
    const search = createKnowledgeSearch({ knowledge: p.knowledge, embedder: e });
    const got = await search('org_1', ['kb_1', 'kb_2'], 'how to hash', 2);
    // a: 1/61 + 1/62; c: 1/63 + 1/61; b: 1/62 (dropped by k = 2)
    expect(got.map((h) => [h.chunk_id, h.score])).toEqual([['a', 0.032522], ['c', 0.032266]]);
    expect(p.calls.search).toEqual([['org_1', ['kb_1', 'kb_2'], 'how to hash', 50]]);
    expect(p.calls.vector).toEqual([['org_1', ['kb_1', 'kb_2'], 'emb-1', new Float32Array([1, 0]), 50]]);
    expect(e.asked).toEqual([['how to hash', 5000]]);
  });

  it('asks each ranking for k passages when k is above the depth, and passes the query timeout', async () => {
    const p = port([hit('a')], [hit('b')]);
    const e = embedder();
    const search = createKnowledgeSearch({ knowledge: p.knowledge, embedder: e, depth: 3, queryTimeoutMs: 250 });
    await search('o', ['kb'], 'q', 7);
    expect(p.calls.search[0]![3]).toBe(7);
    expect(p.calls.vector[0]![4]).toBe(7);
    expect(e.asked).toEqual([['q', 250]]);
    await search('o', ['kb'], 'q', 2);
    expect(p.calls.search[1]![3]).toBe(3);
    expect(p.calls.vector[1]![4]).toBe(3);
  });

  it('falls back to bm25 (its own scores, best k) and warns when the question cannot be embedded', async () => {
    const p = port([hit('a', 9), hit('b', 8), hit('c', 7)], [hit('z')]);
    const warnings: unknown[][] = [];
    const search = createKnowledgeSearch({ knowledge: p.knowledge, embedder: embedder('upstream down'), logger: { warn: (...a: unknown[]) => { warnings.push(a); } } as never });
    expect(await search('o', ['kb'], 'q', 2)).toEqual([hit('a', 9), hit('b', 8)]);
    expect(p.calls.vector).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]![0]).toEqual({ reason: 'upstream down' });
    expect(String(warnings[0]![1])).toContain('bm25');
  });

  it('does no work for no knowledge bases or k <= 0, and bm25 alone for a blank question', async () => {
    const p = port([hit('a', 1)], [hit('z')]);
    const e = embedder();
    const search = createKnowledgeSearch({ knowledge: p.knowledge, embedder: e });
    expect(await search('o', [], 'q', 3)).toEqual([]);
    expect(await search('o', ['kb'], 'q', 0)).toEqual([]);
    expect(p.calls.search).toEqual([]);
    expect(await search('o', ['kb'], '   ', 3)).toEqual([hit('a', 1)]);
    expect(p.calls.search).toEqual([['o', ['kb'], '   ', 3]]);
    expect(e.asked).toEqual([]);
    expect(p.calls.vector).toEqual([]);
  });
});
