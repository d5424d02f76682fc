/** Words too common to help a bm25 query (English). */
const STOPWORDS = new Set(
  ('a an and are as at be but by can do does did for from has have how i if in into is it its me my of on or ' +
    'should so than that the their them then there these they this to us was we what when where which who why ' +
    'will with would you your about any use using').split(' '),
);

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
