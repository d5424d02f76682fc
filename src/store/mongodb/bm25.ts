/**
 * BM25 ranking of knowledge chunks, computed in the application (MongoDB's `$text` finds candidates but
 * its own score has no inverse document frequency): the formula of SQLite FTS5's `bm25()` as the SQLite
 * adapter calls it (src/store/sqlite/knowledge-search.ts: column weights title 4, heading 2, body 1), so
 * both stores rank passages alike. FTS5 (https://www.sqlite.org/fts5.html, section 5.1.1, and its
 * fts5_aux.c) scores a row, for the query's terms t:
 *
 *   score = sum_t idf(t) * f(t) * (k1 + 1) / (f(t) + k1 * (1 - b + b * D / avgdl))
 *   idf(t) = ln((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when that is not positive
 *
 * with k1 = 1.2, b = 0.75, f(t) the weighted count of t in the row (each column's count times its
 * weight), D the row's length in tokens (all columns, unweighted), avgdl the mean length, N the rows and
 * n(t) the rows containing t. Tokens are Unicode letter and digit runs, lower-cased and stemmed (Porter2,
 * src/text/terms.ts); FTS5's `porter unicode61` tokenizer is close to that (it stems with the original
 * Porter rules), so scores agree closely, not exactly.
 */
import { stem, words } from '../../text/terms.js';

/** FTS5's constants. */
export const K1 = 1.2;
export const B = 0.75;

/** Column weights, as in the SQLite search (`bm25(chunks_fts, 4.0, 2.0, 1.0)`). */
export const FIELD_WEIGHTS = { title: 4, heading: 2, body: 1 } as const;

/** The stemmed index terms of `text`, in order. */
export function terms(text: string): string[] {
  return words(text).map(stem);
}

/** A chunk's length in index tokens: title, heading and body (BM25's D). */
export function chunkLength(c: { title: string; heading: string; body: string }): number {
  return terms(c.title).length + terms(c.heading).length + terms(c.body).length;
}

/**
 * The distinct stemmed terms of a search's words (src/store/search-terms.ts queryWords), in order, each
 * with the first token (a letter and digit run of a word) that gave it: what `$text` is asked for, which
 * stems it in its own way.
 */
export function queryTerms(queryWords: readonly string[]): Array<{ term: string; token: string }> {
  const out = new Map<string, string>();
  for (const token of queryWords.flatMap((w) => words(w))) {
    const term = stem(token);
    if (!out.has(term)) out.set(term, token);
  }
  return [...out].map(([term, token]) => ({ term, token }));
}

/** idf of a term found in `n` of `total` rows (FTS5: never below 1e-6). */
export function idf(total: number, n: number): number {
  const v = Math.log((total - n + 0.5) / (n + 0.5));
  return v > 0 ? v : 1e-6;
}

/** The corpus a score is computed against: rows, their mean length, and in how many rows each term is. */
export interface Bm25Corpus {
  rows: number;
  avgLength: number;
  /** Rows containing each query term (a term missing here counts as in no row). */
  docFreq: ReadonlyMap<string, number>;
}

/** What is scored: a chunk's three fields. */
export interface Scored {
  title: string;
  heading: string;
  body: string;
}

/**
 * The BM25 score of `chunk` for the query terms `qterms` in `corpus` (higher is better; 0 when no term
 * occurs in it). The chunk's own length is computed from its text.
 */
export function bm25(chunk: Scored, qterms: readonly string[], corpus: Bm25Corpus): number {
  const counts = new Map<string, number>();
  let length = 0;
  for (const field of ['title', 'heading', 'body'] as const) {
    const weight = FIELD_WEIGHTS[field];
    for (const t of terms(chunk[field])) {
      length++;
      counts.set(t, (counts.get(t) ?? 0) + weight);
    }
  }
  const norm = K1 * (1 - B + (B * length) / (corpus.avgLength > 0 ? corpus.avgLength : 1));
  let score = 0;
  for (const t of qterms) {
    const f = counts.get(t) ?? 0;
    score += (idf(corpus.rows, corpus.docFreq.get(t) ?? 0) * f * (K1 + 1)) / (f + norm);
  }
  return score;
}

/**
 * `candidates` ranked by BM25 (best first; ties by the order given), those with a score of 0 left out, at
 * most `k`; each with its score rounded to 3 decimals (as the SQLite adapter rounds its bm25).
 */
export function rank<T extends Scored>(candidates: readonly T[], qterms: readonly string[], corpus: Bm25Corpus, k: number): Array<{ item: T; score: number }> {
  return candidates
    .map((item, i) => ({ item, i, score: bm25(item, qterms, corpus) }))
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, Math.max(0, k))
    .map(({ item, score }) => ({ item, score: Math.round(score * 1000) / 1000 }));
}
