import { queryWords } from '../search-terms.js';

export { MAX_QUERY_WORDS, MAX_QUERY_WORD_CHARS } from '../search-terms.js';

/**
 * An FTS5 MATCH expression for free text: each word of {@link queryWords} (src/store/search-terms.ts)
 * quoted and OR-ed, so punctuation or FTS syntax in user text can never form an operator. Returns ''
 * when no word is left (the caller then returns no passages).
 */
export function toFtsQuery(text: string): string {
  return queryWords(text).map((w) => `"${w}"`).join(' OR ');
}
