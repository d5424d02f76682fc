/**
 * Knowledge search as turns, the `search_knowledge` tool and the search endpoint run it: bm25 alone, or,
 * with embeddings configured, bm25 and vector search fused by reciprocal rank fusion
 * (docs/knowledge-bases.md "Embeddings (optional)").
 */
import type { Logger } from '../log/logger.js';
import type { KnowledgePort } from '../store/ports.js';
import type { ChunkHit } from '../store/records.js';
import type { ChunkEmbedder } from './chunk-embedder.js';

/** A knowledge search: the best `k` passages of the `ready` documents of `kbIds` of `orgId` for `query`, best first. */
export type KnowledgeSearch = (orgId: string, kbIds: string[], query: string, k: number) => Promise<ChunkHit[]>;

/** The constant k of reciprocal rank fusion (Cormack, Clarke and Buettcher 2009 found 60 a good choice). */
export const RRF_K = 60;

/** Passages taken from each ranking before fusion. */
export const HYBRID_DEPTH = 50;

/** Longest wait for a question's embedding before the search goes on with bm25 alone, ms. */
export const QUERY_EMBED_TIMEOUT_MS = 5000;

/**
 * Reciprocal rank fusion (G. V. Cormack, C. L. A. Clarke, S. Buettcher, "Reciprocal Rank Fusion
 * outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009): a passage's fused score is
 * the sum over the rankings that hold it of 1 / (`k` + its 1-based rank there). Passages are identified
 * by `chunk_id`; the hit kept is the one of the first ranking that holds the passage, with `score`
 * replaced by the fused score (rounded to 1e-6). Best first; equal scores keep the order in which the
 * passages first appear (ranking by ranking). A ranking that repeats a passage counts its best rank only.
 *
 * @throws RangeError when `k` is negative.
 */
export function reciprocalRankFusion(rankings: readonly (readonly ChunkHit[])[], k: number = RRF_K): ChunkHit[] {
  if (!(k >= 0)) throw new RangeError(`RRF k must be >= 0, got ${String(k)}`);
  const fused = new Map<string, { hit: ChunkHit; score: number; first: number }>();
  for (const ranking of rankings) {
    const seen = new Set<string>();
    ranking.forEach((hit, i) => {
      if (seen.has(hit.chunk_id)) return;
      seen.add(hit.chunk_id);
      const add = 1 / (k + i + 1);
      const entry = fused.get(hit.chunk_id);
      if (entry === undefined) fused.set(hit.chunk_id, { hit, score: add, first: fused.size });
      else entry.score += add;
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.first - b.first)
    .map((e) => ({ ...e.hit, score: Math.round(e.score * 1e6) / 1e6 }));
}

/** Options of {@link createKnowledgeSearch}. */
export interface KnowledgeSearchOptions {
  knowledge: Pick<KnowledgePort, 'search' | 'vectorSearch'>;
  /** The embedder of PARLEY_EMBEDDINGS_MODEL; without it the search is the store's bm25 search, unchanged. */
  embedder?: ChunkEmbedder | undefined;
  /** Receives a warning when a question cannot be embedded (the search falls back to bm25). */
  logger?: Pick<Logger, 'warn'>;
  /** Passages per ranking before fusion (default {@link HYBRID_DEPTH}). */
  depth?: number;
  /** Longest wait for the question's embedding, ms (default {@link QUERY_EMBED_TIMEOUT_MS}). */
  queryTimeoutMs?: number;
}

/**
 * The search to use. Without an embedder: `knowledge.search` itself (bm25; no extra work per turn).
 * With one: the bm25 top `depth` and, at the same time, the question's embedding and then the vector
 * top `depth` (chunks with an embedding of the same model), fused by {@link reciprocalRankFusion} with
 * k = {@link RRF_K}, the best `k` returned; `score` is then the fused score. When the question cannot
 * be embedded (upstream down, timeout, bad answer), the search logs a warning and returns bm25's best `k`
 * with their bm25 scores. A vector search failure is not caught (it is a store failure, like bm25's).
 */
export function createKnowledgeSearch(opts: KnowledgeSearchOptions): KnowledgeSearch {
  const { knowledge, embedder } = opts;
  if (embedder === undefined) return (orgId, kbIds, query, k) => knowledge.search(orgId, kbIds, query, k);
  const depth = opts.depth ?? HYBRID_DEPTH;
  const queryTimeoutMs = opts.queryTimeoutMs ?? QUERY_EMBED_TIMEOUT_MS;
  return async (orgId, kbIds, query, k) => {
    if (kbIds.length === 0 || k <= 0) return [];
    if (query.trim() === '') return knowledge.search(orgId, kbIds, query, k);
    const vectorHits = embedder.embedQuery(query, queryTimeoutMs).then(
      (vector) => knowledge.vectorSearch(orgId, kbIds, embedder.model, vector, Math.max(depth, k)),
      (err: unknown) => {
        opts.logger?.warn({ reason: err instanceof Error ? err.message : String(err) }, 'could not embed the search question: bm25 search only');
        return undefined;
      },
    );
    const [lexical, semantic] = await Promise.all([knowledge.search(orgId, kbIds, query, Math.max(depth, k)), vectorHits]);
    if (semantic === undefined) return lexical.slice(0, k);
    return reciprocalRankFusion([lexical, semantic]).slice(0, k);
  };
}
