/**
 * The words a knowledge search asks for, shared by every adapter so that they search for the same thing:
 * SQLite quotes and OR-s them into an FTS5 MATCH expression (src/store/sqlite/search-query.ts), MongoDB
 * gives them to `$text` and rescores with BM25 (src/store/mongodb/bm25.ts).
 */
import { STOPWORDS } from '../text/stopwords.js';
import { stem } from '../text/terms.js';

/** Most distinct words a retrieval query keeps. */
export const MAX_QUERY_WORDS = 32;
/**
 * Longest word a retrieval query keeps, characters. A longer "word" (a whitespace-free run of CJK, or
 * a pasted blob) can only match an identical index token, and the index would have to tokenize it whole.
 */
export const MAX_QUERY_WORD_CHARS = 64;

/**
 * The distinct words of free text a search asks for, in order: Unicode letters/digits/underscore runs,
 * lower-cased, stopwords (src/text/stopwords.ts) and words over {@link MAX_QUERY_WORD_CHARS} characters
 * dropped, a word whose Porter2 stem an earlier word already had dropped too (`streams streaming` asks
 * for `streams` once: both index as the same term), the first {@link MAX_QUERY_WORDS} kept. The scan stops
 * once enough words are kept, so a 32,000-character message costs no more than its first few hundred
 * words. Empty when no word is left (the caller then returns no passages). No word holds a quote, a
 * minus sign or any other search syntax.
 */
export function queryWords(text: string): string[] {
  const kept: string[] = [];
  const stems = new Set<string>();
  const word = /[\p{L}\p{N}_]+/gu;
  const lower = text.toLowerCase();
  let m: RegExpExecArray | null;
  while (kept.length < MAX_QUERY_WORDS && (m = word.exec(lower)) !== null) {
    const w = m[0];
    if (w.length > MAX_QUERY_WORD_CHARS || STOPWORDS.has(w)) continue;
    const s = stem(w);
    if (stems.has(s)) continue;
    stems.add(s);
    kept.push(w);
  }
  return kept;
}
