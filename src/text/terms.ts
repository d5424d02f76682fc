/**
 * Words, stems and content terms: the one stemmer of the project (Porter2, the Snowball English stemmer,
 * from `wink-porter2-stemmer`), used by the builtin model to match question terms against passage
 * sentences and by the retrieval query builder to drop repeated forms of a word. The full-text index
 * itself stems with SQLite FTS5's own `porter` tokenizer, on the indexed text and the query alike, so
 * index and query always agree (src/store/sqlite/database.ts).
 */
import porter2 from 'wink-porter2-stemmer';
import { STOPWORDS } from './stopwords.js';

const WORD_RE = /[\p{L}\p{N}]+/gu;

/** The lower-cased words of `text`: maximal runs of Unicode letters and digits, in order. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD_RE) ?? [];
}

/** Stems already computed (the builtin model stems the same passage words over and over); bounded. */
const cache = new Map<string, string>();
const CACHE_MAX = 50_000;

/**
 * The Porter2 stem of a lower-case word (`listeners` -> `listen`, `streaming` -> `stream`). Words with a
 * character outside a-z (digits, other scripts) are returned as they are: the English rules do not apply.
 */
export function stem(word: string): string {
  if (!/^[a-z]+$/.test(word)) return word;
  let s = cache.get(word);
  if (s === undefined) {
    s = porter2(word);
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(word, s);
  }
  return s;
}

/**
 * Distinct stems of the content words of `text`: its words minus stopwords (src/text/stopwords.ts),
 * minus words of at most `minChars - 1` characters (default: 2 and shorter dropped) and minus `exclude`,
 * stemmed. Insertion order is the words' order in `text`.
 */
export function contentTerms(text: string, opts: { exclude?: ReadonlySet<string>; minChars?: number } = {}): Set<string> {
  const min = opts.minChars ?? 3;
  const out = new Set<string>();
  for (const w of words(text)) {
    if (w.length < min || STOPWORDS.has(w) || opts.exclude?.has(w)) continue;
    out.add(stem(w));
  }
  return out;
}

/** Distinct stems of every word of `text`, stopwords included (what a question's terms are matched against). */
export function stemSet(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of words(text)) out.add(stem(w));
  return out;
}
