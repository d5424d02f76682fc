/**
 * Knowledge search on MongoDB: `$text` finds candidate chunks within each knowledge base, BM25 in the
 * application ranks them (bm25.ts), and a last read keeps the hits whose document is still `ready`.
 */
import type { Document } from 'mongodb';
import type { ChunkHit } from '../records.js';
import { queryWords } from '../search-terms.js';
import { queryTerms, rank, type Bm25Corpus } from './bm25.js';
import type { ChunkDoc, Collections } from './schema.js';

/**
 * Candidates a `$text` query returns at most, per query term and per knowledge base (and as many for all
 * terms together): `$text` ranks by its own score, which has no inverse document frequency, so one query
 * for all terms would let frequent words crowd out the chunks that are best on a rare one; one query per
 * term keeps each term's best chunks.
 */
export function candidatesPerTerm(k: number): number {
  return Math.max(50, 4 * k);
}

/** The `$text` filter of candidates of one knowledge base for `search` (words separated by spaces: OR). */
export function textFilter(orgId: string, kbId: string, search: string): Document {
  return { kb_id: kbId, org_id: orgId, ready: true, $text: { $search: search } };
}

/** Statistics of one knowledge base's ready chunks: how many, and their total length in tokens. */
export interface BaseLengths {
  rows: number;
  tokens: number;
}

/** The BM25 corpus of the searched bases: their rows and mean length added up, and each term's row counts. */
export function corpusOf(bases: readonly BaseLengths[], docFreq: ReadonlyMap<string, number>): Bm25Corpus {
  const rows = bases.reduce((n, b) => n + b.rows, 0);
  const tokens = bases.reduce((n, b) => n + b.tokens, 0);
  return { rows, avgLength: rows > 0 ? tokens / rows : 0, docFreq };
}

/** How long the lengths of a base are kept before they are read again, ms. */
const LENGTHS_TTL_MS = 30_000;

/**
 * Runs searches against `c`: per knowledge base, one `$text` query for all terms and one per term (each
 * at most candidatesPerTerm(k) chunks), one count per term (its document frequency) and the base's
 * lengths (cached for 30 s); then BM25 over the union of the candidates, and a read of the best chunks'
 * documents so that a document deleted or failed since is left out.
 */
export class KnowledgeSearcher {
  private readonly lengths = new Map<string, { at: number; value: BaseLengths }>();

  constructor(private readonly c: Collections, private readonly now: () => number = Date.now) {}

  /** Forgets the lengths of knowledge base `kbId` (its chunks changed in this process). */
  forget(kbId: string): void {
    this.lengths.delete(kbId);
  }

  async search(orgId: string, kbIds: string[], query: string, k: number): Promise<ChunkHit[]> {
    const words = queryWords(query);
    if (words.length === 0 || kbIds.length === 0 || k <= 0) return [];
    const pairs = queryTerms(words);
    const qterms = pairs.map((p) => p.term);
    const perTerm = candidatesPerTerm(k);
    const candidates = new Map<string, ChunkDoc>();
    const docFreq = new Map<string, number>();
    const bases: BaseLengths[] = [];
    for (const kbId of new Set(kbIds)) {
      const [all, ...byTerm] = await Promise.all([words.join(' '), ...pairs.map((p) => p.token)].map((s) => this.candidates(orgId, kbId, s, perTerm)));
      for (const d of [...all!, ...byTerm.flat()]) candidates.set(d._id, d);
      const counts = await Promise.all(pairs.map((p) => this.c.chunks.countDocuments(textFilter(orgId, kbId, p.token))));
      pairs.forEach((p, i) => docFreq.set(p.term, (docFreq.get(p.term) ?? 0) + counts[i]!));
      bases.push(await this.baseLengths(kbId));
    }
    const ranked = rank([...candidates.values()], qterms, corpusOf(bases, docFreq), k * 2);
    if (ranked.length === 0) return [];
    const ready = new Set((await this.c.documents.find(
      { _id: { $in: [...new Set(ranked.map((r) => r.item.doc_id))] }, org_id: orgId, status: 'ready' }, { projection: { _id: 1 } },
    ).toArray()).map((d) => d._id));
    return ranked.filter((r) => ready.has(r.item.doc_id)).slice(0, k).map(({ item, score }) => ({
      document_id: item.doc_id, chunk_id: item._id, title: item.title, heading: item.heading, text: item.body, page: item.page ?? null, score,
    }));
  }

  private candidates(orgId: string, kbId: string, search: string, limit: number): Promise<ChunkDoc[]> {
    return this.c.chunks.find(textFilter(orgId, kbId, search), {
      projection: { doc_id: 1, title: 1, heading: 1, body: 1, page: 1, score: { $meta: 'textScore' } },
    }).sort({ score: { $meta: 'textScore' } }).limit(limit).toArray() as Promise<ChunkDoc[]>;
  }

  private async baseLengths(kbId: string): Promise<BaseLengths> {
    const cached = this.lengths.get(kbId);
    if (cached !== undefined && this.now() - cached.at < LENGTHS_TTL_MS) return cached.value;
    const [sums] = await this.c.chunks.aggregate<BaseLengths>([
      { $match: { kb_id: kbId, ready: true } },
      { $group: { _id: null, rows: { $sum: 1 }, tokens: { $sum: '$dl' } } },
    ]).toArray();
    const value = { rows: sums?.rows ?? 0, tokens: sums?.tokens ?? 0 };
    this.lengths.set(kbId, { at: this.now(), value });
    return value;
  }
}
