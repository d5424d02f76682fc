import { STOPWORDS } from '../../text/stopwords.js';

/**
 * An FTS5 MATCH expression for free text: each distinct word (Unicode letters/digits, lower-cased,
 * stopwords dropped, at most 32) quoted and OR-ed, so punctuation or FTS syntax in user text can never
 * form an operator. Returns '' when no word is left (the caller then returns no passages).
 */
export function toFtsQuery(text: string): string {
  const words = text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const kept = [...new Set(words.filter((w) => !STOPWORDS.has(w)))].slice(0, 32);
  return kept.map((w) => `"${w}"`).join(' OR ');
}
