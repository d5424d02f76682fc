import { STOPWORDS } from '../../text/stopwords.js';
import { stem } from '../../text/terms.js';

/** Most distinct words a retrieval query keeps. */
export const MAX_QUERY_WORDS = 32;
/**
 * Longest word a retrieval query keeps, characters. A longer "word" (a whitespace-free run of CJK, or
 * a pasted blob) can only match an identical index token, and FTS5 would have to tokenize it whole.
 */
export const MAX_QUERY_WORD_CHARS = 64;

/**
 * An FTS5 MATCH expression for free text: each distinct word (Unicode letters/digits/underscore,
 * lower-cased, stopwords (src/text/stopwords.ts) and words over {@link MAX_QUERY_WORD_CHARS} characters
 * dropped, a word whose Porter2 stem an earlier word already had dropped too (`streams streaming` asks
 * for `streams` once: the index's porter tokenizer would count both as the same term), the first
 * {@link MAX_QUERY_WORDS} kept) quoted and OR-ed, so punctuation or FTS syntax in user text can never
 * form an operator. The scan stops once enough words are kept, so a 32,000-character message costs
 * no more than its first few hundred words. Returns '' when no word is left (the caller then returns
 * no passages).
 */
export function toFtsQuery(text: string): string {
  const kept = new Set<string>();
  const stems = new Set<string>();
  const word = /[\p{L}\p{N}_]+/gu;
  const lower = text.toLowerCase();
  let m: RegExpExecArray | null;
  while (kept.size < MAX_QUERY_WORDS && (m = word.exec(lower)) !== null) {
    const w = m[0];
    if (w.length > MAX_QUERY_WORD_CHARS || STOPWORDS.has(w)) continue;
    const s = stem(w);
    if (stems.has(s)) continue;
    stems.add(s);
    kept.add(w);
  }
  return [...kept].map((w) => `"${w}"`).join(' OR ');
}
